#!/usr/bin/env bash
# What each install adds (the README's install table): a fresh virtual environment per
# install from the wheel; site-packages by du, packages by pip list.
#   bash benches/install_sizes.sh [WORKDIR]     (needs python3 with venv, and the network or a pip cache)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
cd "$work"
python3 -m pip wheel -q --no-deps -w wheel "$repo"
wheel=$(ls "$PWD"/wheel/relmodel-*.whl)
for install in bare core studies exact test docs; do
  rm -rf "env-$install" && python3 -m venv "env-$install"
  case $install in
    bare) ;;
    core) "env-$install/bin/pip" install -q "$wheel" ;;
    *) "env-$install/bin/pip" install -q "relmodel[$install] @ file://$wheel" ;;
  esac
  site=$("env-$install/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  echo "$install $(du -sm "$site" | cut -f1) MB $("env-$install/bin/pip" list --format=freeze | wc -l) packages"
done
