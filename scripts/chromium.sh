# Sourced by the screenshot scripts: sets `chromium` to the Chromium to
# drive ($CHROMIUM, else the first of chromium, chromium-browser,
# google-chrome on PATH), or exits with status 2 saying how to install it.
chromium="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"
if [[ -z "$chromium" ]]; then
  echo "no Chromium found: install it (Debian: apt-get install -y chromium) or set CHROMIUM" >&2
  exit 2
fi
