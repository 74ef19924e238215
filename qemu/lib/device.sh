# SPDX-License-Identifier: GPL-2.0
# The device under test: up, down, what the image carries, its counters and QP attributes.
# Part of /rsiw/lib.sh, which sources every qemu/lib/*.sh.

# require_rsiw NAME: fails NAME (and returns 1) if rsiw.ko is not in the image.
require_rsiw() {
    if [ -n "$RSIW_KO_MISSING" ]; then fail "$1" "$RSIW_KO_MISSING"; return 1; fi
    return 0
}

# require_provider NAME: fails NAME (and returns 1) if the rsiw provider is not in the image.
require_provider() {
    if [ -n "$RSIW_PROVIDER_MISSING" ]; then fail "$1" "$RSIW_PROVIDER_MISSING"; return 1; fi
    return 0
}

# dev_max_qp DEV: the max_qp DEV reports through `ibv_devinfo -v` (empty if it cannot be read).
dev_max_qp() {
    ibv_devinfo -v -d "$1" 2>/dev/null | sed -n 's/^[[:space:]]*max_qp:[[:space:]]*\([0-9][0-9]*\).*/\1/p' | head -n 1
}

# require_datapath NAME DEV: a device without a data path reports max_qp 0 (rsiw before
# its QPs exist); then NAME is skipped with that reason and 1 returned, so the script
# can stop (`require_datapath … || finish`). A device that cannot be queried fails NAME.
require_datapath() {
    local n; n=$(dev_max_qp "$2")
    if [ -z "$n" ]; then
        fail "$1" "ibv_devinfo -v -d $2 shows no max_qp: $(ibv_devinfo -v -d "$2" 2>&1 | tail -n 1)"; return 1
    fi
    if [ "$n" -eq 0 ]; then skip "$1" "$2: no QPs yet (max_qp=0)"; return 1; fi
    return 0
}

# dev_up TYPE NAME NETDEV: load TYPE's module (rsiw, siw or rdma_rxe) and add device NAME
# on NETDEV; rsiw also needs the image to carry rsiw.ko and its provider.
dev_up() {
    mod=$1
    [ "$1" = rxe ] && mod=rdma_rxe
    if [ "$1" = rsiw ]; then
        require_rsiw "$2: rsiw.ko is in the image" || return 1
        require_provider "$2: the rsiw provider is in the image" || return 1
    fi
    # RSIW_MODPARAMS: module parameters for rsiw (e.g. qp_conn_port=4792).
    # shellcheck disable=SC2086
    if [ "$mod" = rsiw ]; then
        step "modprobe $mod $RSIW_MODPARAMS" modprobe "$mod" $RSIW_MODPARAMS || return 1
    else
        step "modprobe $mod" modprobe "$mod" || return 1
    fi
    # busybox modprobe ignores softdeps; userspace verbs need ib_uverbs.
    modprobe ib_uverbs 2>/dev/null
    step "rdma link add $2 type $1 netdev $3" rdma link add "$2" type "$1" netdev "$3" || return 1
    case " $RSIW_REQUIRES " in
    *" datapath "*) require_datapath "$2: data path" "$2" || return 1 ;;
    esac
    return 0
}

# dev_down TYPE NAME: delete NAME and unload TYPE's module.
dev_down() {
    mod=$1
    [ "$1" = rxe ] && mod=rdma_rxe
    step "rdma link delete $2" rdma link delete "$2"
    step "rmmod $mod" rmmod "$mod"
}

# stats_save DEV FILE: the port counters of DEV/1 (`rdma statistic show link`), one
# `name value` per line, into FILE.
stats_save() {
    rdma statistic show link "$1/1" | tr -s ' ' '\n' |
        awk 'NR > 2 { if (k == "") k = $0; else { print k, $0; k = "" } }' > "$2"
}

# stat_delta DEV FILE NAME: how much counter NAME of DEV/1 grew since `stats_save DEV FILE`.
stat_delta() {
    awk -v n="$3" '$1 == n { print $2 }' "$2" > /tmp/.stat_before
    rdma statistic show link "$1/1" | tr -s ' ' '\n' |
        awk -v n="$3" -v b="$(cat /tmp/.stat_before)" 'prev == n { print $0 - b; exit } { prev = $0 }'
}

# qp_attr QPN NAME [FILE]: the driver attribute NAME (without `drv_`) of QP QPN in
# `rdma -dd resource show qp` (or in FILE, a saved copy of its output).
qp_attr() {
    if [ -n "$3" ]; then cat "$3"; else rdma -dd resource show qp; fi |
        awk -v q="$1" '$3 == "lqpn" && $4 == q' | tr -s ' ' '\n' |
        awk -v n="drv_$2" 'prev == n { print; exit } { prev = $0 }'
}
