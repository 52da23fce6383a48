#!/usr/bin/env bash
# Run every fuzz target of fuzz/ for SECONDS each, seeded from the committed
# corpus (fuzz/seeds/TARGET) and from the fixtures (JAX traces, Kineto traces
# cut to their first events, a small simulated run).
#
#   scripts/fuzz.sh SECONDS [TARGET...]      run (default: every target)
#   MINIMIZE=1 scripts/fuzz.sh SECONDS ...   then minimise each corpus and keep
#                                            its inputs under 4 KiB in
#                                            fuzz/seeds/TARGET (commit it)
#
# Needs cargo-fuzz (installed here with `cargo install cargo-fuzz --locked`
# when missing) and python3. cargo-fuzz needs nightly features; on a stable
# toolchain RUSTC_BOOTSTRAP=1 enables them. Targets are built optimised with
# debug assertions and overflow checks, without a sanitizer (the code under
# test is safe Rust; AddressSanitizer would need a nightly standard library).
# Prints the executions per target; exit status 1 when a target crashed (the
# input is kept in fuzz/artifacts/TARGET: add it as a regression test in the
# crate that owns the code).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:?usage: scripts/fuzz.sh SECONDS [TARGET...]}
shift
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: installing it (cargo install cargo-fuzz --locked)" >&2
    cargo install cargo-fuzz --locked
fi
flags=(--fuzz-dir fuzz -O -a -s none)
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list --fuzz-dir fuzz)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Seeds from the fixtures.
cargo run --release -q -p align-cli -- -q synth "$work/synth" --nodes 2 --gpus 1 \
    --steps 60 --kernels 4 --seed 7
mkdir -p "$work/xspace" "$work/kineto" "$work/offsets" "$work/snapshots"
for f in fixtures/jax-cpu/*/*.xplane.pb "$work"/synth/*.xplane.pb; do
    cp "$f" "$work/xspace/$(echo "$f" | tr '/' '_')"
done
cp "$work/synth/round_offsets.jsonl" "$work/offsets/"
cp "$work"/synth/*.snapshots.pb "$work/snapshots/"
python3 - "$work/kineto" fixtures/kineto-gloo/*/rank*.pt.trace.json.gz <<'EOF'
# Each Kineto fixture cut to its first events (whole traces are megabytes).
import gzip, json, os, sys
out = sys.argv[1]
for i, path in enumerate(sys.argv[2:]):
    trace = json.load(gzip.open(path))
    trace["traceEvents"] = trace["traceEvents"][:60]
    with open(os.path.join(out, f"kineto{i}.json"), "w") as f:
        json.dump(trace, f)
EOF

# Only now: RUSTC_BOOTSTRAP changes every crate's build fingerprint, so the
# release align-cli above is built without it.
export RUSTC_BOOTSTRAP=1

seeds_for() {
    case "$1" in
        decode|walk|align|collectives) echo "$work/xspace" ;;
        kineto|collectives_kineto) echo "$work/kineto" ;;
        offsets) echo "$work/offsets" ;;
        snapshots) echo "$work/snapshots" ;;
        *) echo "" ;;
    esac
}

cargo fuzz build "${flags[@]}" >&2

failed=0
summary=()
for t in "${targets[@]}"; do
    corpus="fuzz/corpus/$t"
    mkdir -p "$corpus"
    if [ -d "fuzz/seeds/$t" ]; then cp -n fuzz/seeds/"$t"/* "$corpus"/ 2>/dev/null || true; fi
    extra=$(seeds_for "$t")
    if [ -n "$extra" ]; then cp -n "$extra"/* "$corpus"/; fi
    log="$work/$t.log"
    echo "== $t: ${seconds}s" >&2
    if cargo fuzz run "${flags[@]}" "$t" "$corpus" -- \
        -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
        status=ok
    else
        status=CRASH
        failed=1
        grep -E "panicked|ERROR|Test unit written" "$log" | head -5 >&2 || true
    fi
    runs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
    rate=$(grep -oE "exec/s: *[0-9]+" "$log" | tail -1 | grep -oE "[0-9]+$" || echo "?")
    inputs=$(find "$corpus" -type f | wc -l)
    summary+=("$(printf '%-20s %-6s %10s runs %8s exec/s %6s corpus files' "$t" "$status" "$runs" "$rate" "$inputs")")
    if [ "${MINIMIZE:-0}" = 1 ] && [ "$status" = ok ]; then
        rm -rf "$work/min" && mkdir -p "$work/min"
        cargo fuzz cmin "${flags[@]}" "$t" "$corpus" >/dev/null 2>&1
        # Inputs under 4 KiB only: the fixtures seed every run anyway, and
        # the committed corpus stays small.
        rm -rf "fuzz/seeds/$t" && mkdir -p "fuzz/seeds/$t"
        find "$corpus" -type f -size -4096c -exec cp {} "fuzz/seeds/$t/" \;
    fi
done

echo
echo "fuzz: ${seconds}s per target"
printf '%s\n' "${summary[@]}"
exit $failed
