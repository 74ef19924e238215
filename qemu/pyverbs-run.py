#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Runs rdma-core's pyverbs tests on one device, module after module, in one process.

Usage: pyverbs-run.py DEV MODULE...  (MODULE: test_pd, test_qp, ...)

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
    loader = unittest.TestLoader()
    for name in modules:
        print(f'PYVERBS-MODULE {name} begin', flush=True)
        mod = getattr(tests, name, None)
        result = Result(name)
        if mod is None:
            print(f'PYVERBS {name} error {name}: no such test module', flush=True)
        else:
            loader.loadTestsFromModule(mod).run(result)
        print(f'PYVERBS-MODULE {name} end', flush=True)


if __name__ == '__main__':
    main()
