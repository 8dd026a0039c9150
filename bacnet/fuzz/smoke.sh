#!/usr/bin/env bash
# Fuzz smoke run: every cargo-fuzz target of the bacnet core for N seconds
# each (first argument, default 10), starting from the committed seed corpora
# in seeds/<target>/. Fails if any target crashes, panics, leaks past
# libFuzzer's RSS limit or hangs on one input for 10 s; the input that did it
# is left in fuzz/artifacts/<target>/.
#
# The targets are what `cargo fuzz list` names: the [[bin]] entries of
# fuzz/Cargo.toml. `segmentation` is stateful (a client and a server TSM on a
# simulated link, see fuzz/src/segmentation.rs); its findings replay with a
# trace:
#   cargo run --manifest-path bacnet/fuzz/Cargo.toml --example replay_segmentation -- --trace ARTIFACT
#
# It runs on the toolchain rust-toolchain.toml pins (stable): cargo-fuzz needs
# nightly only for sanitizers (-Zsanitizer), and `--sanitizer none` leaves
# libFuzzer's coverage instrumentation (-Cpasses=sancov-module, stable flags).
# The core is `#![forbid(unsafe_code)]`, so what fuzzing finds here is panics,
# overflow (debug assertions are on, -a) and failed round-trip assertions,
# none of which needs AddressSanitizer. To fuzz with it on the same stable
# toolchain anyway: FUZZ_SANITIZER=address bash fuzz/smoke.sh 60 (sets
# RUSTC_BOOTSTRAP=1 for that build only; about 7x fewer executions).
#
# Usage: bash bacnet/fuzz/smoke.sh [SECONDS]
set -euo pipefail

secs="${1:-10}"
sanitizer="${FUZZ_SANITIZER:-none}"
cargo_fuzz_version="0.13.2"

cd "$(dirname "${BASH_SOURCE[0]}")/.." # bacnet/, where cargo fuzz finds fuzz/

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "smoke: installing cargo-fuzz $cargo_fuzz_version"
    cargo install cargo-fuzz --locked --version "$cargo_fuzz_version"
fi

if [ "$sanitizer" != none ]; then
    export RUSTC_BOOTSTRAP=1
fi
flags=(--sanitizer "$sanitizer" --debug-assertions)

# Build every target first, so the time budget is spent fuzzing.
cargo fuzz build "${flags[@]}"

failed=()
summary=()
for target in $(cargo fuzz list); do
    mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
    log="fuzz/artifacts/$target/smoke.log"
    echo "smoke: $target for ${secs}s"
    # The first corpus directory is where libFuzzer writes new inputs, so
    # fuzz/corpus/ (ignored by git) comes before the committed seeds.
    if cargo fuzz run "${flags[@]}" "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
        -max_total_time="$secs" -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
        runs=$(grep -o '^Done [0-9]* runs' "$log" | grep -o '[0-9]*' || echo '?')
        summary+=("$target: ok, $runs executions in ${secs}s")
    else
        failed+=("$target")
        summary+=("$target: FAILED (see $log)")
        grep -E 'panicked|ERROR: libFuzzer|SUMMARY|Test unit written' "$log" | head -20 || true
    fi
done

printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "smoke: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
    exit 1
fi
