# Shared set-up of the scripts that synthesise one run per seed (sourced,
# not run): `seeds` from the first argument (default "1 2 3 4 5", shifted
# off), `cli` (ALIGN_CLI, default this checkout's release build, brought up
# to date first so that a stale binary never measures old code) and `work`,
# a temporary folder removed on exit.
seeds=${1:-"1 2 3 4 5"}
shift || true
if [ -z "${ALIGN_CLI:-}" ]; then
    cargo build --release -q --locked -p align-cli
fi
cli=${ALIGN_CLI:-target/release/align-cli}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
