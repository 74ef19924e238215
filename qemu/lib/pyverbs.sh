# SPDX-License-Identifier: GPL-2.0
# rdma-core's pyverbs tests (pyverbs-*.sh).
# Part of /rsiw/lib.sh, which sources every qemu/lib/*.sh.

# PYVERBS_MODULES: rdma-core's pyverbs test modules that are not vendor-specific
# (mlx5, efa) and need no GPU (Debian 12's python3-pyverbs 44 has no test_srq), and
# rsiw_restate, written on rdma-core's test classes in /rsiw/pyverbs-run.py: QP
# connections from modify_qp connect again after RESET and after ERROR.
PYVERBS_MODULES="test_addr test_atomic test_cq test_cq_events test_cqex test_device
test_flow test_fork test_mr test_odp test_parent_domain test_pd test_qp test_qpex
test_rdmacm test_relaxed_ordering test_rss_traffic test_shared_pd test_tag_matching
rsiw_restate"

# PYVERBS_IWARP: tests that assert what IB gives and iWARP cannot, one per line,
# `ID<TAB>why` (testing.md lists them with the evidence). In judge mode a failure of one
# of these is a skipped case with that reason, never a pass; any other failure fails
# its module.
PYVERBS_IWARP="tests.test_mr.MWTest.test_mw_type2_invalidate_dealloc	iWARP: an RDMA Write is not acknowledged (RFC 5040); the responder refuses the dead window with a Terminate and writes nothing (the test's data check shows it), but the Write already completed with success, not Remote access error
tests.test_mr.MWTest.test_mw_type2_invalidate_local	iWARP: an RDMA Write is not acknowledged (RFC 5040); the responder refuses the dead window with a Terminate and writes nothing (the test's data check shows it), but the Write already completed with success, not Remote access error
tests.test_mr.MWTest.test_mw_type2_invalidate_remote	iWARP: an RDMA Write is not acknowledged (RFC 5040); the responder refuses the dead window with a Terminate and writes nothing (the test's data check shows it), but the Write already completed with success, not Remote access error
tests.test_rdmacm.CMTestCase.test_rdmacm_async_traffic	iWARP: rdma_cm applies RDMA_OPTION_ID_ACK_TIMEOUT only to IB transitions (IB_QP_TIMEOUT); iw_cm's QP attributes never carry it, so query_qp returns 0, not the 21 the test set
tests.test_rdmacm.CMTestCase.test_rdmacm_async_traffic_external_qp	iWARP: iw_cm reports ESTABLISHED when the MPA Reply arrives; there is no CONNECT_RESPONSE/rdma_establish step (IB's RTU)
tests.test_rdmacm.CMTestCase.test_rdmacm_async_udp_traffic	iWARP: RDMA_PS_UDP needs a UD QP; iWARP has none (create QP fails with EOPNOTSUPP, which this test does not turn into a skip)"

# pyverbs_suite DEV judge|compare TIMEOUT: runs the pyverbs modules on DEV in one
# python3 (/rsiw/pyverbs-run.py, images with `# rsiw-image: pyverbs`) and reports a case
# per module. judge (the device under test): a module passes if none of its tests
# failed or errored and at least one ran; every skipped test is one skipped case with
# the tests' own reason; a module whose tests all skipped is skipped. compare (the
# reference device, siw): a module passes if all its tests passed, otherwise it is
# skipped with its counts, so the two runs can be read side by side.
pyverbs_suite() {
    dev=$1; mode=$2; tmo=$3
    out=/tmp/pyverbs-$dev.log
    # shellcheck disable=SC2086
    timeout "$tmo" python3 /rsiw/pyverbs-run.py "$dev" $PYVERBS_MODULES > "$out" 2>&1
    rc=$?
    cat "$out"
    [ $rc -eq 124 ] && echo "pyverbs on $dev: timed out after $tmo s"
    printf '%s\n' "$PYVERBS_IWARP" > /tmp/pyverbs-iwarp
    awk -v dev="$dev" -v mode="$mode" -v mods="$PYVERBS_MODULES" '
        function clean(s) { gsub(/[\r\n]/, " ", s); return s }
        FNR == NR { split($0, f, "\t"); if (f[1] != "") iwarp[f[1]] = f[2]; next }
        /^PYVERBS-MODULE / { if ($3 == "end") ended[$2] = 1; next }
        /^PYVERBS-START / { last = $2; next }
        /^PYVERBS / {
            m = $2; k = $3; id = $4; sub(/:$/, "", id)
            why = $0; if (!sub(/^[^:]*: /, "", why)) why = ""
            n[m, k]++
            short = id; sub(/^tests\./, "", short)
            if ((k == "fail" || k == "error") && mode == "judge" && (id in iwarp)) {
                # An IB assertion iWARP cannot meet: a skip with the reason, not a pass.
                n[m, k]--; n[m, "skip"]++; k = "skip"
                why = iwarp[id] " (the test said: " clean(why) ")"
            }
            if (k == "skip" && mode == "judge")
                print "SKIP\tpyverbs " short " on " dev "\t" clean(why)
            if (k == "fail" || k == "error" || k == "xpass")
                bad[m] = bad[m] " " id (why == "" ? "" : " (" clean(why) ")")
            if (k == "skip" && first_skip[m] == "") first_skip[m] = clean(why)
        }
        END {
            c = split(mods, list, /[ \n]+/)
            for (i = 1; i <= c; i++) {
                m = list[i]; if (m == "") continue
                ok = n[m, "ok"] + n[m, "xfail"]; sk = n[m, "skip"] + 0
                nb = n[m, "fail"] + n[m, "error"] + n[m, "xpass"]
                counts = ok " passed, " sk " skipped, " nb " failed"
                print "INFO\tpyverbs " m " on " dev ": " counts
                name = "pyverbs " m " on " dev
                if (!(m in ended))
                    print (mode == "judge" ? "FAIL" : "SKIP") "\t" name "\tdid not finish (last test started: " last "); " counts
                else if (mode == "compare")
                    print (nb == 0 && sk == 0 && ok > 0 ? "PASS" : "SKIP") "\t" name "\treference run: " counts
                else if (nb > 0)
                    print "FAIL\t" name "\t" nb " failed:" bad[m]
                else if (ok == 0)
                    print "SKIP\t" name "\tall " sk " tests skipped (" first_skip[m] ")"
                else
                    print "PASS\t" name "\t" counts
            }
        }' /tmp/pyverbs-iwarp "$out" > /tmp/pyverbs-cases
    while IFS='	' read -r verdict name why; do
        case $verdict in
        PASS) pass "$name" ;;
        FAIL) fail "$name" "$why" ;;
        SKIP) skip "$name" "$why" ;;
        INFO) echo "$name" ;;
        esac
    done < /tmp/pyverbs-cases
}
