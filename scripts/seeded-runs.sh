# Shared set-up of the scripts that synthesise one run per seed (sourced,
# not run): `seeds` from the first argument (default "1 2 3 4 5", shifted
# off), `cli` (ALIGN_CLI, default this checkout's release build, built when
# missing) and `work`, a temporary folder removed on exit.
seeds=${1:-"1 2 3 4 5"}
shift || true
cli=${ALIGN_CLI:-target/release/align-cli}
[ -x "$cli" ] || cargo build --release -q -p align-cli
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
