#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Runs rdma-core's pyverbs tests on one device, module after module, in one process.

Usage: pyverbs-run.py DEV MODULE...  (MODULE: test_pd, test_qp, ..., and rsiw's own
rsiw_restate, defined here)

The tests are Debian's python3-pyverbs tests as the image has them (uncompressed);
they run as rdma-core's run_tests.py runs them (`--dev DEV`, the tests' own
selection of port and GID). One line per test for qemu/lib.sh's pyverbs_suite:

    PYVERBS-MODULE <module> begin|end
    PYVERBS <module> ok|skip|fail|error|xfail|xpass <test id>[: <reason>]

with the traceback of a failure or error printed before its line.
"""

import os
import sys
import traceback
import unittest

TESTS = os.environ.get('PYVERBS_TESTS', '/usr/share/rdma-core/tests')
# How long an RDMA Write's target may take to show the Write's data (iWARP).
WRITE_SETTLE_S = 1.0


def one_line(s):
    return ' '.join(str(s).split())[:400]


class Result(unittest.TestResult):
    """Prints each test's outcome as it happens (the run may be cut by a timeout)."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def emit(self, kind, test, why=None):
        line = f'PYVERBS {self.module} {kind} {test.id()}'
        if why:
            line += ': ' + one_line(why)
        print(line, flush=True)

    def startTest(self, test):
        super().startTest(test)
        print(f'PYVERBS-START {test.id()}', flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.emit('ok', test)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.emit('skip', test, reason)

    def _bad(self, kind, test, err):
        print(''.join(traceback.format_exception(*err)), flush=True)
        self.emit(kind, test, ''.join(traceback.format_exception_only(*err[:2])))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._bad('fail', test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._bad('error', test, err)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.emit('xfail', test)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.emit('xpass', test)


def iwarp_write_placement(dev):
    """On an iWARP device, rdma-core's `rdma_traffic` reads the target of each RDMA
    Write as soon as the Write's own completion is polled, which on InfiniBand
    follows the responder's acknowledgement. An iWARP RDMA Write has no response
    message (RFC 5040) and completes once its source buffer may be reused: its data
    is placed at the peer's pace, and the test can read the target before the
    placement (seen once in CI: a 1 KiB target still zero after the Write
    completed). The test's data check stays: the wrapper reads the target until it
    holds the expected octets or WRITE_SETTLE_S passed, then validates what it read,
    as rdma-core does; a Write that never arrives fails as before (a second later)."""
    try:
        with open(f'/sys/class/infiniband/{dev}/node_type') as f:
            if 'RNIC' not in f.read():
                return
    except OSError:
        return
    import time
    import pyverbs.enums as e
    import tests.utils as u

    writes = (e.IBV_WR_RDMA_WRITE, e.IBV_QP_EX_WITH_RDMA_WRITE)
    original = u.rdma_traffic

    def placed(player, size, char):
        deadline = time.monotonic() + WRITE_SETTLE_S
        got = player.mem_read(size)
        while got[:size] != char * size and time.monotonic() < deadline:
            time.sleep(0.001)
            got = player.mem_read(size)
        return got

    def rdma_traffic(client, server, iters, gid_idx, port, new_send=False,
                     send_op=None):
        # rdma-core 44's loop for a Write (RC: no address handle), each side's
        # check after the placement.
        if send_op not in writes:
            return original(client, server, iters, gid_idx, port, new_send, send_op)
        idx = 1 if new_send else 0
        for _ in range(iters):
            wr = u.get_send_elements(client, False, send_op)[idx]
            u.send(client, wr, send_op, new_send)
            u.poll_cq(client.cq)
            u.validate(placed(server, server.msg_size, b'c'), True, server.msg_size)
            wr = u.get_send_elements(server, True, send_op)[idx]
            u.send(server, wr, send_op, new_send)
            u.poll_cq(server.cq)
            u.validate(placed(client, client.msg_size, b's'), False, client.msg_size)

    u.rdma_traffic = rdma_traffic


def rsiw_restate():
    """rsiw's own module, run like rdma-core's: QP connections from modify_qp connect
    again after RESET (RESET→INIT→RTR→RTS with the attributes query_qp returned, as
    rdma-core's test_mr restates its QPs in the rereg tests, which skip on a device
    without rereg_mr), twice in a row, and after both QPs were moved to ERROR; Sends
    and RDMA Writes go through after each."""
    import time
    import types
    import pyverbs.enums as e
    import tests.utils as u
    from pyverbs.qp import QPAttr
    from tests.base import RDMATestCase
    from tests.test_mr import MRRes

    access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE

    class QPRestateTest(RDMATestCase):
        def setUp(self):
            super().setUp()
            self.iters = 10
            self.client = MRRes(**self.dev_info, mr_access=access)
            self.server = MRRes(**self.dev_info, mr_access=access)
            self.client.pre_run(self.server.psns, self.server.qps_num)
            self.server.pre_run(self.client.psns, self.client.qps_num)
            self.server.rkey = self.client.mr.rkey
            self.server.remote_addr = self.client.mr.buf
            self.client.rkey = self.server.mr.rkey
            self.client.remote_addr = self.server.mr.buf
            self.server_attr, _ = self.server.qp.query(0x1ffffff)
            self.client_attr, _ = self.client.qp.query(0x1ffffff)
            self.args = {'client': self.client, 'server': self.server,
                         'iters': self.iters, 'gid_idx': self.gid_index,
                         'port': self.ib_port}

        def restate(self):
            for qp in (self.server.qp, self.client.qp):
                qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
            # The first RESET closed the stream, and on iWARP the stream is the
            # connection: the other QP went to ERROR and flushed the receive
            # traffic() leaves posted, as any consumer reaps such completions
            # before it uses the CQ again (IB would notice nothing until a
            # retry ran out). Its RESET then ends that too.
            time.sleep(0.2)
            for cq in (self.server.cq, self.client.cq):
                while cq.poll(16)[0] > 0:
                    pass
            self.server.qp.to_rts(self.server_attr)
            self.client.qp.to_rts(self.client_attr)

        def traffic(self):
            u.traffic(**self.args)
            u.rdma_traffic(**self.args, send_op=e.IBV_WR_RDMA_WRITE)

        def test_reconnect_after_reset(self):
            self.traffic()
            for _ in range(2):
                self.restate()
                self.traffic()

        def test_reconnect_after_error(self):
            self.traffic()
            for qp in (self.server.qp, self.client.qp):
                qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
            self.restate()
            self.traffic()

    mod = types.ModuleType('rsiw_restate')
    mod.QPRestateTest = QPRestateTest
    return mod


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    dev, modules = sys.argv[1], sys.argv[2:]
    sys.path.insert(0, TESTS)
    from args_parser import parser
    sys.argv = [sys.argv[0], '--dev', dev]
    parser.parse_args()
    # As run_tests.py: the directory is the package `tests` (its modules import
    # `tests.base`); loading it imports every test module.
    from importlib.machinery import SourceFileLoader
    tests = SourceFileLoader('tests', os.path.join(TESTS, '__init__.py')).load_module()
    iwarp_write_placement(dev)
    loader = unittest.TestLoader()
    for name in modules:
        print(f'PYVERBS-MODULE {name} begin', flush=True)
        mod = rsiw_restate() if name == 'rsiw_restate' else getattr(tests, name, None)
        result = Result(name)
        if mod is None:
            print(f'PYVERBS {name} error {name}: no such test module', flush=True)
        else:
            loader.loadTestsFromModule(mod).run(result)
        print(f'PYVERBS-MODULE {name} end', flush=True)


if __name__ == '__main__':
    main()
