#!/usr/bin/env bash
# Installs the system packages the tests use, only those missing.
# iproute2: veth testbeds are checked against `ip`; tshark: pcaps must decode as RoCE/PFC;
# tmux: the TUI is driven as a user would.
# opensm, ibsim-utils, libumad2sim0, infiniband-diags: the OpenSM LFT dump and ibnetdiscover
# topology exports are loaded by ibsim + `opensm -R file -U` and read back with ibroute;
# graphviz: `dot` renders the DOT export; frr: `vtysh --dryrun` checks the FRR exports.
# prometheus (with promtool): a real Prometheus scrapes `fabric serve` (promtool lints
# /metrics), and fabric-tui --prometheus reads one.
# lldpd, prometheus-node-exporter (with frr and prometheus): the FRR testbed runs them per switch
# namespace and `fabric serve --observe` reads what they report.
# slurm-wlm, munge: a private slurmctld (nodes in the CLOUD state, no slurmd) reads the
# Slurm topology export and places jobs (fabric-manager/tests/slurm.rs).
set -euo pipefail
need=()
for pkg in iproute2 tshark tmux opensm ibsim-utils libumad2sim0 infiniband-diags graphviz frr prometheus lldpd prometheus-node-exporter slurm-wlm munge; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
# llvm-<major>: llvm-profdata of the LLVM major version rustc uses, for the profile-guided
# build (scripts/build-pgo.sh --check); not needed when rustup's llvm-tools provide it.
llvm_major=$(rustc -vV 2>/dev/null | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
if [ -n "$llvm_major" ] && ! ls "$(rustc --print sysroot)"/lib/rustlib/*/bin/llvm-profdata >/dev/null 2>&1; then
  dpkg -s "llvm-$llvm_major" >/dev/null 2>&1 || need+=("llvm-$llvm_major")
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages ${need[*]}; run as root or install them" >&2
    exit 1
  fi
  echo "install-deps: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections || true
  apt-get update -qq
  # Packages with daemons (frr, opensm, prometheus, lldpd, node_exporter, slurmctld, munged) must not start them: the tests only run their
  # tools. Deny service starts during the install unless a policy is already in place.
  policy_added=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    policy_added=1
  fi
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  if [ "$policy_added" -eq 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
fi
