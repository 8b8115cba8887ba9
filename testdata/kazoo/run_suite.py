"""Runs kazoo's own test suite (Debian's python3-kazoo ships it) against the
ZooKeeper servers named in ZK_SERVERS (host:port,...): a real ensemble or
the served fake (cmd/zkfake-server).

kazoo's harness starts a ZooKeeper cluster of its own; here its
get_global_cluster is replaced by the servers given, which the suite cannot
stop or start: the tests that stop a server are skipped, on either side.
Usage: ZK_SERVERS=127.0.0.1:2181 python3 run_suite.py [pytest arguments]
It needs Debian's python3-kazoo, python3-pytest and python3-mock; pytest's
short summary (-rA) names each test's outcome.
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
    id or -k EXPR selects tests)."""
    import pytest

    tests = os.path.dirname(kazoo.tests.__file__)
    args = [tests, "-q", "-rA", "-p", "no:cacheprovider", "--timeout=120"] if has_timeout() else [tests, "-q", "-rA", "-p", "no:cacheprovider"]
    sys.exit(pytest.main(args + sys.argv[1:]))


def has_timeout():
    try:
        import pytest_timeout  # noqa: F401
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    main()
