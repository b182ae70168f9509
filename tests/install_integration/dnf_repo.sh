# The stand-in RPM repositories, the root and the cases of the dnf integration test (sourced by dnf.sh).
#
# Stand-in RPMs are real packages made with rpmbuild from a spec with no files, so dnf resolves, installs, upgrades
# and switches module streams exactly as it does for NVIDIA's. What they reproduce, and from where:
#   - NVIDIA's module streams nvidia-driver:<branch>-open, each with the profiles `default` and `fm` (FabricManager:
#     the driver's packages plus the fabric manager and NSCQ), artifacts named name-epoch:version-release.arch and
#     the defaults document, as NVIDIA/cuda-repo-management genmodules.py writes modules.yaml; added to the repository
#     with `modifyrepo_c --mdtype=modules`, as that repository's README says ("injected into repomd.xml using
#     modifyrepo_c");
#   - epoch 3 on the driver packages (genmodules.py reads `%{epochnum}`; NVIDIA's driver version-locking page shows
#     "kmod-nvidia-open-dkms-3:575.51-1.fc41");
#   - the compute-only packages nvidia-driver-cuda and kmod-nvidia-open-dkms (driver installation guide,
#     compute-only-and-desktop-installation.html), the fabric manager named nvidia-fabricmanager / libnvidia-nscq
#     from 580 (NVIDIA/gpu-driver-container rhel9/precompiled/Dockerfile);
#   - dkms from EPEL (the driver installation guide: EPEL for DKMS), EPEL enabled by its epel-release package's repo
#     file, and a disabled CodeReady Builder repository with the id `crb` (Rocky 9).

DNF_BRANCHES="580.95.05 590.48.01"
DNF_KERNEL=5.14.0-427.13.1.el9_4.x86_64
DNF_KERNEL_EL10=6.12.0-55.9.1.el10_0.x86_64

# rpm_standin OUTDIR NAME VERSION[-RELEASE] [requires...]: OUTDIR/x86_64/NAME-VERSION-RELEASE.x86_64.rpm (release 1
# unless given; epoch 3 for the driver's).
rpm_standin() {
  local outdir=$1 name=$2 version=$3 release=1
  shift 3
  # A kernel's VERSION-RELEASE ("5.14.0-427.13.1.el9_4"): rpm's Version has no dash.
  [[ $version == *-* ]] && release=${version#*-} && version=${version%%-*}
  local top epoch="" requires="" files="" install=""
  top=$(mktemp -d "$WORK/.rpmbuild.XXXXXX")
  case "$name" in nvidia-* | kmod-nvidia-* | libnvidia-*) epoch="Epoch: 3" ;; esac
  for requirement in "$@"; do requires+="Requires: $requirement"$'\n'; done
  if [ "$name" = epel-release ]; then
    # The real epel-release installs /etc/yum.repos.d/epel.repo.
    install="mkdir -p %{buildroot}/etc/yum.repos.d && printf '[epel]\\nname=epel\\nbaseurl=file:///srv/rpm/epel\\nenabled=1\\ngpgcheck=0\\n' > %{buildroot}/etc/yum.repos.d/epel.repo"
    files="/etc/yum.repos.d/epel.repo"
  fi
  mkdir -p "$top/SPECS"
  cat >"$top/SPECS/$name.spec" <<SPEC
Name: $name
Version: $version
Release: $release
$epoch
Summary: stand-in for $name (gpuenv dnf integration test)
License: none
BuildArch: x86_64
${requires}
%description
stand-in for $name
%install
$install
%files
$files
SPEC
  rpmbuild --quiet --define "_topdir $top" --define "_rpmdir $outdir" --define "_build_id_links none" \
    -bb "$top/SPECS/$name.spec" >/dev/null
  rm -rf "$top"
}

# The modules.yaml of the CUDA repository: one modulemd document per stream and the defaults (genmodules.py).
write_modules_yaml() {
  local out=$1 version stream package
  : >"$out"
  for version in $DNF_BRANCHES; do
    stream="${version%%.*}-open"
    {
      echo "document: modulemd"
      echo "version: 2"
      echo "data:"
      echo "    name: nvidia-driver"
      echo "    stream: $stream"
      echo "    version: 20260101000000"
      echo "    context: $(printf 'nvidia-driver%s%sel9' "$stream" 20260101000000 | md5sum | cut -c1-10)"
      echo "    arch: x86_64"
      echo "    summary: Nvidia driver for $stream branch"
      echo "    description: >-"
      echo "        stand-in"
      echo "    license:"
      echo "        module:"
      echo "            - MIT"
      echo "    artifacts:"
      echo "        rpms:"
      for package in nvidia-driver-cuda kmod-nvidia-open-dkms nvidia-fabricmanager libnvidia-nscq; do
        echo "            - $package-3:$version-1.x86_64"
      done
      echo "    profiles:"
      echo "        default:"
      echo "            description: Default installation"
      echo "            rpms:"
      echo "                - kmod-nvidia-open-dkms"
      echo "                - nvidia-driver-cuda"
      echo "        fm:"
      echo "            description: FabricManager installation"
      echo "            rpms:"
      echo "                - kmod-nvidia-open-dkms"
      echo "                - libnvidia-nscq"
      echo "                - nvidia-driver-cuda"
      echo "                - nvidia-fabricmanager"
      echo "..."
      echo "---"
    } >>"$out"
  done
  local newest=${DNF_BRANCHES##* }
  {
    echo "document: modulemd-defaults"
    echo "version: 1"
    echo "data:"
    echo "    module: nvidia-driver"
    echo "    stream: ${newest%%.*}-open"
    echo "    profiles:"
    for version in $DNF_BRANCHES; do echo "        ${version%%.*}-open: [default]"; done
    echo "..."
  } >>"$out"
}

# build_dnf_repositories WORK: the repositories under WORK/tree/srv/rpm (copied into each root's /srv/rpm).
build_dnf_repositories() {
  local srv=$1/tree/srv/rpm version
  mkdir -p "$srv/base" "$srv/crb" "$srv/epel" "$srv/cuda/rhel9/x86_64" "$srv/nct/stable/rpm/x86_64"
  rpm_standin "$srv/base" epel-release 9
  rpm_standin "$srv/base" kernel-devel-matched "${DNF_KERNEL%.x86_64}"
  rpm_standin "$srv/base" kernel-headers "${DNF_KERNEL%.x86_64}"
  rpm_standin "$srv/epel" dkms 3.1.1
  for version in $DNF_BRANCHES; do
    rpm_standin "$srv/cuda/rhel9/x86_64" kmod-nvidia-open-dkms "$version" dkms
    rpm_standin "$srv/cuda/rhel9/x86_64" nvidia-driver-cuda "$version" "kmod-nvidia-open-dkms = 3:$version-1"
    rpm_standin "$srv/cuda/rhel9/x86_64" nvidia-fabricmanager "$version"
    rpm_standin "$srv/cuda/rhel9/x86_64" libnvidia-nscq "$version"
  done
  rpm_standin "$srv/cuda/rhel9/x86_64" cuda-toolkit-12-8 12.8.1
  rpm_standin "$srv/nct/stable/rpm/x86_64" nvidia-container-toolkit 1.17.8
  # RHEL/Rocky 10: NVIDIA's rhel10 repository has no module streams (driver installation guide, kernel-modules.html);
  # the branch is kept by the versionlock plugin (version-locking.html), whose package the plan installs.
  mkdir -p "$srv/cuda/rhel10/x86_64"
  rpm_standin "$srv/base" python3-dnf-plugin-versionlock 4.7.0
  for version in $DNF_BRANCHES; do
    rpm_standin "$srv/cuda/rhel10/x86_64" kmod-nvidia-open-dkms "$version" dkms
    rpm_standin "$srv/cuda/rhel10/x86_64" nvidia-driver-cuda "$version" "kmod-nvidia-open-dkms = 3:$version-1"
  done
  rpm_standin "$srv/cuda/rhel10/x86_64" cuda-toolkit-12-9 12.9.1
  local repo
  for repo in base crb epel cuda/rhel9/x86_64 cuda/rhel10/x86_64 nct/stable/rpm/x86_64; do
    createrepo_c -q "$srv/$repo"
  done
  write_modules_yaml "$1/modules.yaml"
  modifyrepo_c --mdtype=modules "$1/modules.yaml" "$srv/cuda/rhel9/x86_64/repodata" >/dev/null
}

# new_installroot CASE_DIR [EL]: a Debian root with dnf that reports itself as Rocky Linux EL (9, or 10) with that
# release's kernel; its dnf and rpm act on /installroot; the repositories under /srv/rpm.
new_installroot() {
  local dest=$1/root el=${2:-9} kernel=$DNF_KERNEL
  [ "$el" = 10 ] && kernel=$DNF_KERNEL_EL10
  mkdir -p "$1"
  cp -a "$BASE_ROOT" "$dest"
  rm -f "$dest/etc/os-release"
  cat >"$dest/etc/os-release" <<OS
NAME="Rocky Linux"
VERSION="$el"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="$el"
PLATFORM_ID="platform:el$el"
PRETTY_NAME="Rocky Linux $el"
OS
  mkdir -p "$dest/etc/yum.repos.d" "$dest/installroot" "$dest/var/lib/gpuenv-test" "$dest/etc/gpuenv"
  echo "$kernel" >"$dest/var/lib/gpuenv-test/osrelease"
  cp -a "$WORK/tree/." "$dest/"
  printf '[base]\nname=base\nbaseurl=file:///srv/rpm/base\nenabled=1\ngpgcheck=0\n' >"$dest/etc/yum.repos.d/base.repo"
  printf '[crb]\nname=crb\nbaseurl=file:///srv/rpm/crb\nenabled=0\ngpgcheck=0\n' >"$dest/etc/yum.repos.d/crb.repo"
  printf '[main]\ngpgcheck=0\nbest=True\nskip_if_unavailable=False\n' >"$dest/etc/dnf/dnf.conf"
  # Debian's rpm keeps its database in ~/.rpmdb; an EL node's is /var/lib/rpm, for dnf and rpm alike.
  mkdir -p "$dest/etc/rpm"
  echo '%_dbpath /var/lib/rpm' >"$dest/etc/rpm/macros.dbpath"
  install -D -m 0755 /dev/stdin "$dest/usr/local/bin/dnf" <<'WRAP'
#!/bin/sh
# The real dnf, on the installroot (this root plays the node; /installroot receives its packages).
exec /usr/bin/dnf --installroot=/installroot --releasever=EL --setopt=module_platform_id=platform:elEL \
  --setopt=reposdir=/etc/yum.repos.d,/installroot/etc/yum.repos.d --setopt=cachedir=/var/cache/dnf \
  --disableplugin=local "$@"
WRAP
  sed -i "s/EL/$el/g" "$dest/usr/local/bin/dnf"
  install -D -m 0755 /dev/stdin "$dest/usr/local/bin/rpm" <<'WRAP'
#!/bin/sh
exec /usr/bin/rpm --root /installroot "$@"
WRAP
  install -D -m 0755 /dev/stdin "$dest/usr/local/sbin/systemctl" <<'STUB'
#!/bin/sh
log=/var/lib/gpuenv-test/systemctl.log
verb=$1
shift
case "$verb" in
  enable | start) for unit; do echo "$verb $unit" >>"$log"; done ;;
  is-enabled | is-active)
    want=enable; state=enabled
    [ "$verb" = is-active ] && want=start && state=active
    rc=0
    for unit; do
      if grep -qx "$want $unit" "$log" 2>/dev/null; then echo "$state"; else echo "unknown"; rc=1; fi
    done
    exit $rc ;;
  *) echo "systemctl stand-in: $verb not supported" >&2; exit 1 ;;
esac
STUB
  install -m 0755 "$GPUENV" "$dest/usr/local/bin/gpuenv"
}

# write_dnf_profile ROOT BRANCH: a Rocky Linux 9 profile for CUDA 12.8 and the open modules of BRANCH.
write_dnf_profile() {
  printf 'schema = 1\nname = "rocky9-%s"\n[os]\ndistro = "rockylinux"\nversion = "9"\n[cuda]\nversion = "12.8.1"\n[driver]\nbranch = "%s"\nmodules = "open"\n' \
    "$2" "$2" >"$1/etc/gpuenv/profile.toml"
}

# dnf_apply RUN: gpuenv install in the case's root; RUN.{rc,json,err} in the case directory, the log in the root.
dnf_apply() {
  local run=$1 rc=0
  in_root "$CASE_DIR/root" gpuenv install /etc/gpuenv/profile.toml --json --repo-url file:///srv/rpm/cuda \
    --toolkit-repo-url file:///srv/rpm/nct --log "/var/log/gpuenv/$run.log" \
    >"$CASE_DIR/$run.json" 2>"$CASE_DIR/$run.err" || rc=$?
  echo "$rc" >"$CASE_DIR/$run.rc"
  echo "$rc"
}

# write_el10_profile ROOT BRANCH: a Rocky Linux 10 profile for CUDA 12.9 and the open modules of BRANCH.
write_el10_profile() {
  printf 'schema = 1\nname = "rocky10-%s"\n[os]\ndistro = "rockylinux"\nversion = "10"\n[cuda]\nversion = "12.9.1"\n[driver]\nbranch = "%s"\nmodules = "open"\n' \
    "$2" "$2" >"$1/etc/gpuenv/profile.toml"
}

# expect_rerun_changes_nothing LABEL: gpuenv again (run "rerun") on the converged case root: exit 0, changed=false,
# no dnf install or stream switch in its log, no new dnf transaction.
expect_rerun_changes_nothing() {
  local label=$1 root=$CASE_DIR/root history rc
  history=$(in_root "$root" dnf -q history list 2>/dev/null | wc -l)
  rc=$(dnf_apply rerun)
  expect_equal "$label exits 0" "$rc" 0
  expect_equal "$label: changed=false" "$(json "$CASE_DIR/rerun.json" .changed)" false
  expect "$label: no dnf install in the log" lacks "$root/var/log/gpuenv/rerun.log" ' \$ dnf .*(install|switch-to)'
  expect_equal "$label: dnf made no transaction" "$(in_root "$root" dnf -q history list 2>/dev/null | wc -l)" "$history"
}

# rpm_version PACKAGE: the version of PACKAGE in the installroot ("absent" when not installed).
rpm_version() { in_root "$CASE_DIR/root" rpm -q --qf '%{VERSION}' "$1" 2>/dev/null || echo absent; }

# A fresh install at 580, a re-run that changes nothing, then the profile's branch changed to 590.
case_fresh_rerun_switch() {
  local root=$CASE_DIR/root rc
  write_dnf_profile "$root" 580
  rc=$(dnf_apply fresh)
  expect_equal "fresh install exits 0" "$rc" 0
  expect_equal "fresh install: outcome no_gpu (this machine has no NVIDIA GPU)" "$(json "$CASE_DIR/fresh.json" .outcome)" no_gpu
  expect_equal "fresh install: nvidia-driver-cuda 580" "$(rpm_version nvidia-driver-cuda)" 580.95.05
  expect_equal "fresh install: kmod-nvidia-open-dkms 580" "$(rpm_version kmod-nvidia-open-dkms)" 580.95.05
  expect_equal "fresh install: dkms from EPEL" "$(rpm_version dkms)" 3.1.1
  expect_equal "fresh install: cuda-toolkit-12-8" "$(rpm_version cuda-toolkit-12-8)" 12.8.1
  expect_equal "fresh install: nvidia-container-toolkit" "$(rpm_version nvidia-container-toolkit)" 1.17.8
  expect "fresh install: CodeReady Builder enabled" contains "$root/etc/yum.repos.d/crb.repo" '^enabled *= *(1|True|true)'
  expect "fresh install: the stream nvidia-driver:580-open is enabled" \
    contains <(in_root "$root" dnf -q module list --enabled nvidia-driver 2>/dev/null) '580-open +(\[d\])?\[e\]'
  [ "$FAILURES" -eq "$CASE_FAILURES" ] || show_dnf_run fresh

  local failures_before=$FAILURES
  expect_rerun_changes_nothing "re-run"
  [ "$FAILURES" -eq "$failures_before" ] || show_dnf_run rerun

  failures_before=$FAILURES
  write_dnf_profile "$root" 590
  rc=$(dnf_apply switch)
  expect_equal "branch switch exits 0" "$rc" 0
  expect_equal "branch switch: nvidia-driver-cuda 590" "$(rpm_version nvidia-driver-cuda)" 590.48.01
  expect_equal "branch switch: kmod-nvidia-open-dkms 590" "$(rpm_version kmod-nvidia-open-dkms)" 590.48.01
  expect "branch switch: the stream nvidia-driver:590-open is enabled" \
    contains <(in_root "$root" dnf -q module list --enabled nvidia-driver 2>/dev/null) '590-open +(\[d\])?\[e\]'
  [ "$FAILURES" -eq "$failures_before" ] || show_dnf_run switch
}

# An HGX node (NVSwitches on the PCI bus, no GPU driver yet): the stream's fm profile brings fabric manager and NSCQ
# at the driver's version, and the fabric manager service is enabled.
case_fabric_node() {
  local root=$CASE_DIR/root rc bus
  # /sys is not mounted in the root (root.sh): these files are what gpuenv reads as the PCI bus. 0x22a3 is the
  # NVSwitch of HGX H100 ("Bridge [0680]: NVIDIA Corporation Device [10de:22a3]", tests/fixtures/install/nodes/
  # hgx-h100-ubuntu2204/SOURCES.md).
  for bus in 0000:05:00.0 0000:06:00.0; do
    mkdir -p "$root/sys/bus/pci/devices/$bus"
    printf '0x10de\n' >"$root/sys/bus/pci/devices/$bus/vendor"
    printf '0x22a3\n' >"$root/sys/bus/pci/devices/$bus/device"
    printf '0x068000\n' >"$root/sys/bus/pci/devices/$bus/class"
  done
  write_dnf_profile "$root" 580
  rc=$(dnf_apply fabric)
  expect_equal "fabric node exits 0" "$rc" 0
  expect_equal "fabric node: the plan has fabric manager" "$(json "$CASE_DIR/fabric.json" .fabric_manager)" true
  expect "fabric node: the driver step switches to the stream's fm profile" \
    contains "$root/var/log/gpuenv/fabric.log" ' \$ dnf -y module switch-to --allowerasing nvidia-driver:580-open/fm$'
  expect_equal "fabric node: nvidia-fabricmanager at the driver's version" "$(rpm_version nvidia-fabricmanager)" 580.95.05
  expect_equal "fabric node: libnvidia-nscq at the driver's version" "$(rpm_version libnvidia-nscq)" 580.95.05
  expect "fabric node: nvidia-fabricmanager enabled (systemctl, recorded)" \
    contains "$root/var/lib/gpuenv-test/systemctl.log" '^enable nvidia-fabricmanager$'
  expect "fabric node: the fm profile is installed" \
    contains <(in_root "$root" dnf -q module list --installed nvidia-driver 2>/dev/null) 'fm \[i\]'
  [ "$FAILURES" -eq "$CASE_FAILURES" ] || show_dnf_run fabric
}

# Rocky Linux 10 (no module streams; the versionlock plugin keeps the branch): a fresh install at 580, a re-run that
# changes nothing, a switch to 590 and back to 580. A bare `dnf install nvidia-driver-cuda` is "already installed" on
# a node of another branch; the plan names each package with the branch's version.
case_el10_versionlock() {
  rm -rf "$CASE_DIR/root"
  new_installroot "$CASE_DIR" 10
  local root=$CASE_DIR/root rc lock=$CASE_DIR/root/etc/dnf/plugins/versionlock.list
  write_el10_profile "$root" 580
  rc=$(dnf_apply fresh)
  expect_equal "EL10 fresh install exits 0" "$rc" 0
  expect_equal "EL10 fresh install: nvidia-driver-cuda 580" "$(rpm_version nvidia-driver-cuda)" 580.95.05
  expect_equal "EL10 fresh install: kmod-nvidia-open-dkms 580" "$(rpm_version kmod-nvidia-open-dkms)" 580.95.05
  expect "EL10 fresh install: the versionlock list holds branch 580" contains "$lock" '^nvidia-driver-cuda-3:580\.'
  [ "$FAILURES" -eq "$CASE_FAILURES" ] || show_dnf_run fresh

  local failures_before=$FAILURES
  expect_rerun_changes_nothing "EL10 re-run"
  [ "$FAILURES" -eq "$failures_before" ] || show_dnf_run rerun

  local branch version
  for branch in 590 580; do
    failures_before=$FAILURES
    version=580.95.05
    [ "$branch" = 590 ] && version=590.48.01
    write_el10_profile "$root" "$branch"
    rc=$(dnf_apply "switch$branch")
    expect_equal "EL10 switch to $branch exits 0" "$rc" 0
    expect_equal "EL10 switch to $branch: nvidia-driver-cuda" "$(rpm_version nvidia-driver-cuda)" "$version"
    expect_equal "EL10 switch to $branch: kmod-nvidia-open-dkms" "$(rpm_version kmod-nvidia-open-dkms)" "$version"
    expect "EL10 switch to $branch: the lock holds only branch $branch" \
      both contains "$lock" "^nvidia-driver-cuda-3:$branch\\." -- lacks "$lock" "^[a-z-]+-3:$([ "$branch" = 590 ] && echo 580 || echo 590)\\."
    [ "$FAILURES" -eq "$failures_before" ] || show_dnf_run "switch$branch"
  done
}

# show_dnf_run RUN: the evidence of one gpuenv run, after a failing check.
show_dnf_run() {
  echo "  --- $1: exit $(cat "$CASE_DIR/$1.rc"), stderr:"
  sed 's/^/  | /' "$CASE_DIR/$1.err" | tail -20 || true
  echo "  --- $1: install log (last 40 lines):"
  { sed 's/^/  | /' "$CASE_DIR/root/var/log/gpuenv/$1.log" 2>/dev/null || echo "  | (none)"; } | tail -40
}
