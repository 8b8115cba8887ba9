"""Runs kazoo's own test suite (Debian's python3-kazoo ships it) against the
ZooKeeper servers named in ZK_SERVERS (host:port,...): a real ensemble or
the served fake (cmd/zkfake-server).

kazoo's harness starts a ZooKeeper cluster of its own; here its
get_global_cluster is replaced by the servers given, which the suite cannot
stop or start: the tests that stop a server are skipped, on either side.
Usage: ZK_SERVERS=127.0.0.1:2181 python3 run_suite.py [test file] [pytest arguments]
It needs Debian's python3-kazoo, python3-pytest and python3-mock (and, for
test_sasl.py's logins, python3-pure-sasl); pytest's short summary (-rA)
names each test's outcome.
"""
import os
import sys
import unittest

import kazoo.tests
import kazoo.testing.harness as harness


class Server:
    """A server of the cluster kazoo's tests ask for."""

    def __init__(self, address):
        self.address = address
        self.running = True

    def run(self):
        pass

    def stop(self):
        raise unittest.SkipTest("the suite cannot stop a server it did not start")

    def reset(self):
        pass


class Cluster(list):
    """The servers of ZK_SERVERS as kazoo's harness sees its cluster."""

    def __getitem__(self, i):
        # A test that reaches for a server beyond those given (the
        # read-only test stops two of three) cannot run here.
        if isinstance(i, int) and i >= len(self):
            raise unittest.SkipTest("the test needs more servers than ZK_SERVERS names")
        return super().__getitem__(i)

    def start(self):
        pass

    def stop(self):
        pass

    def terminate(self):
        pass

    def reset(self):
        pass


CLUSTER = Cluster(Server(a) for a in os.environ["ZK_SERVERS"].split(","))
harness.get_global_cluster = lambda: CLUSTER


def main():
    """Runs the suite under pytest, in this process, so that the cluster
    above stands in for kazoo's; arguments are passed on to pytest (a test
    id or -k EXPR selects tests). An argument that names one of kazoo's
    test files, alone or with its test (test_sasl.py,
    test_sasl.py::TestSASLDigestAuthentication), runs that file instead of
    the whole suite: pytest then imports only it, and the other files'
    dependencies (objgraph, gevent, eventlet) need not be installed."""
    import pytest

    tests = os.path.dirname(kazoo.tests.__file__)
    chosen = [a for a in sys.argv[1:] if a.startswith("test_") and a.split("::")[0].endswith(".py")]
    rest = [a for a in sys.argv[1:] if a not in chosen]
    paths = [os.path.join(tests, a) for a in chosen] or [tests]
    args = paths + ["-q", "-rA", "-p", "no:cacheprovider"]
    if has_timeout():
        args.append("--timeout=120")
    sys.exit(pytest.main(args + rest))


def has_timeout():
    try:
        import pytest_timeout  # noqa: F401
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    main()
