# Shared by the reproduction scripts: runs tiersim jobs two at a time.
# run_missing BINARY JOB... runs each job ("run ... --json FILE") whose FILE does not
# exist yet, so that a script stopped at any point runs only what is missing again.
run_missing() {
    local bin=$1 j
    shift
    local todo=()
    for j in "$@"; do
        [ -e "${j##*--json }" ] || todo+=("$j")
    done
    [ ${#todo[@]} -eq 0 ] || printf '%s\n' "${todo[@]}" | xargs -P 2 -I{} sh -c "$bin {} > /dev/null"
}
