"""A kazoo test suite that drives the served fake's faults.

Run it with Debian's python3-kazoo, from the repository's root:

    python3 -m unittest testdata/kazoo/test_faults.py

It starts `go run ./cmd/zkfake-server` itself, or uses the one named by the
ZK and ADMIN environment variables (the fake's address, and its admin
interface's URL). Each test resets the fake (POST /reset), opens a kazoo
client, makes the fault happen through the admin interface, and checks what
kazoo sees: faults a real server gives only by chance, on demand.
"""
import json
import os
import subprocess
import threading
import unittest
import urllib.request

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss

server = None


def setUpModule():
    global server
    if "ZK" not in os.environ:
        server = subprocess.Popen(
            ["go", "run", "./cmd/zkfake-server", "-addr", "127.0.0.1:0", "-admin", "127.0.0.1:0"],
            stdout=subprocess.PIPE, text=True)
        os.environ["ZK"] = server.stdout.readline().strip()
        os.environ["ADMIN"] = server.stdout.readline().split()[-1]


def tearDownModule():
    if server is not None:
        server.terminate()
        server.wait()


def admin(path, body=None):
    """POSTs to the fake's admin interface and returns its JSON answer."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(os.environ["ADMIN"] + path, data=data, method="POST")
    with urllib.request.urlopen(req) as resp:
        text = resp.read()
    return json.loads(text) if text.strip() else None


class Faults(unittest.TestCase):
    def setUp(self):
        admin("/reset")
        self.zk = KazooClient(hosts=os.environ["ZK"], timeout=4)
        self.states = []
        self.lost = threading.Event()
        self.zk.add_listener(self.listen)
        self.zk.start(timeout=10)

    def tearDown(self):
        self.zk.stop()
        self.zk.close()

    def listen(self, state):
        self.states.append(state)
        if state == KazooState.LOST:
            self.lost.set()

    def session(self):
        return "0x%x" % self.zk.client_id[0]

    def test_expiry_takes_the_ephemeral_node(self):
        self.zk.create("/workers/a", ephemeral=True, makepath=True)
        admin("/sessions/%s/expire" % self.session())
        self.assertTrue(self.lost.wait(10), "kazoo never saw its session LOST")
        self.zk.restart()
        self.assertIsNone(self.zk.exists("/workers/a"))

    def test_lost_reply_leaves_the_create_applied(self):
        admin("/lose-reply", {"op": "create", "path_prefix": "/jobs/", "applied": True})
        self.zk.ensure_path("/jobs")
        with self.assertRaises(ConnectionLoss):
            self.zk.create("/jobs/job-", sequence=True)
        # The create was applied though its caller heard of a lost connection:
        # the "ghost" node a retrying caller must look for.
        self.assertEqual(self.zk.retry(self.zk.get_children, "/jobs"), ["job-0000000000"])

    def test_partition_healed_in_time_keeps_the_session(self):
        self.zk.create("/workers/b", ephemeral=True, makepath=True)
        sid = self.session()  # kazoo forgets it while it reconnects
        admin("/sessions/%s/partition" % sid)
        admin("/sessions/%s/heal" % sid)
        self.assertTrue(self.zk.retry(self.zk.exists, "/workers/b"))
        self.assertFalse(self.lost.is_set())
        self.assertIn(KazooState.SUSPENDED, self.states)


if __name__ == "__main__":
    unittest.main()
