# The stand-in repositories and the cases of the install integration test (sourced by run.sh).
#
# The profile (tests/fixtures/install/cuda-12.4-debian12-580.toml) asks for Debian 12, CUDA 12.4, cuDNN 9 and the
# proprietary 580 driver. The stand-in CUDA repository reproduces the dependency structure of NVIDIA's Debian
# repository, each control field from its public source:
#   - cuda-drivers-<branch> depends with `>=` on unsuffixed driver packages: NVIDIA's debian12 cuda-drivers-580
#     580.105.08-1 reads "Depends: nvidia-driver (>= 580.65.06), nvidia-driver-cuda (>= 580.65.06),
#     nvidia-kernel-dkms (>= 580.65.06), nvidia-settings (>= 580.65.06), nvidia-xconfig (>= 580.65.06)", and apt
#     installed the 590 components (https://forums.developer.nvidia.com/t/debian-cuda-drivers-580-package-580-105-
#     08-1-improperly-pulls-in-v590-components/353805);
#   - several branches side by side: the unsuffixed packages at 550, 580 and 590, and from 590 the unsuffixed
#     cuda-drivers meta (driver installation guide, recent-updates.html, Table 4: "cuda-drivers: no change");
#   - the pinning packages nvidia-driver-pinning-<branch>, "Section: NVIDIA, Provides/Conflicts/Replaces:
#     nvidia-driver-pinning" (an apt-cache show of the Ubuntu 24.04 repository, recorded in a public package
#     matrix; their preferences payload is not public and is left out);
#   - Release "Label: NVIDIA CUDA" (index_repository);
#   - the fabric manager and NSCQ of each branch, unsuffixed from 580 as the repositories' file names show
#     ("nvidia-fabricmanager-575_575.57.08-1_amd64.deb" but "nvidia-fabricmanager_580.65.06-1_amd64.deb" in
#     https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/, as recorded in a public script that
#     handles both; debian12/x86_64/ has nvidia-fabricmanager-570_570.195.03-1_amd64.deb), with no dependency on
#     the driver: nothing but the installer keeps their version equal to the kernel module's, which the fabric
#     manager requires (Fabric Manager user guide, https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/);
#   - an older update of branch 580 (580.65.06, the floor cuda-drivers-580 depends on) for a node installed earlier.
# The kernel release the node reports is 6.1.0-18-cloud-amd64 (bound over /proc in the root, root.sh), Debian's
# cloud flavour, whose headers meta package is linux-headers-cloud-amd64.

DRIVER_550=550.163.01-1
DRIVER_580=580.95.05-1
DRIVER_590=590.48.01-1
DRIVER_580_OLD=580.65.06-1
CUDNN=9.1.0.70
TOOLKIT=1.17.8-1
KERNEL=6.1.0-18-cloud-amd64

# The unsuffixed driver packages a cuda-drivers meta depends on (the forum thread's Depends line).
DRIVER_PARTS="nvidia-driver nvidia-driver-cuda nvidia-kernel-dkms nvidia-settings nvidia-xconfig"

# What a converged node has installed (checked with dpkg after a successful run).
expected_packages() {
  echo "linux-headers-$KERNEL" linux-headers-cloud-amd64 cuda-drivers-580 $DRIVER_PARTS cuda-toolkit-12-4 \
    cudnn9-cuda-12 libcudnn9-cuda-12 nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container1
}

# The Depends line of a cuda-drivers meta for BRANCH_FLOOR ("580.65.06"): each part at >= the floor.
drivers_depends() {
  local floor=$1 part out=""
  for part in $DRIVER_PARTS; do out="$out${out:+, }$part (>= $floor)"; done
  echo "$out"
}

# build_repositories TREE POOL: the repositories every case starts from, at their paths under TREE (merged into each
# root), and the variants a case swaps in, in POOL.
build_repositories() {
  local tree=$1 pool=$2 cuda toolkit archive version part
  cuda=$tree$(cuda_dir)
  toolkit=$tree$(toolkit_dir)
  archive=$tree$(archive_dir)
  mkdir -p "$cuda" "$toolkit" "$archive" "$pool"
  standin "$archive" "linux-headers-$KERNEL" 6.1.76-1
  standin "$archive" linux-headers-cloud-amd64 6.1.76-1 "depends=linux-headers-$KERNEL (= 6.1.76-1)"
  standin "$cuda" cuda-keyring 1.1-1 arch=all
  for version in "$DRIVER_550" "$DRIVER_580_OLD" "$DRIVER_580" "$DRIVER_590"; do
    for part in $DRIVER_PARTS; do standin "$cuda" "$part" "$version"; done
  done
  for version in "$DRIVER_580_OLD" "$DRIVER_580" "$DRIVER_590"; do
    standin "$cuda" nvidia-fabricmanager "$version"
    standin "$cuda" libnvidia-nscq "$version"
  done
  standin "$cuda" cuda-drivers-550 "$DRIVER_550" "depends=$(drivers_depends 550.54.14)"
  standin "$cuda" cuda-drivers-580 "$DRIVER_580_OLD" "depends=$(drivers_depends 580.65.06)"
  standin "$cuda" cuda-drivers-580 "$DRIVER_580" "depends=$(drivers_depends 580.65.06)"
  standin "$cuda" cuda-drivers "$DRIVER_590" "depends=$(drivers_depends 590.48.01)"
  for version in "$DRIVER_580" "$DRIVER_590"; do
    standin "$cuda" "nvidia-driver-pinning-${version%%.*}" "$version" arch=all section=NVIDIA \
      provides=nvidia-driver-pinning conflicts=nvidia-driver-pinning replaces=nvidia-driver-pinning
  done
  standin "$cuda" cuda-toolkit-12-3 12.3.2-1
  standin "$cuda" cuda-toolkit-12-4 12.4.1-1
  standin "$cuda" cuda-toolkit-12-5 12.5.1-1
  standin "$cuda" cuda-compat-12-4 550.54.15-1
  standin "$cuda" libcudnn9-cuda-12 "$CUDNN-1"
  standin "$cuda" cudnn9-cuda-12 "$CUDNN-2" "depends=libcudnn9-cuda-12"
  standin "$toolkit" libnvidia-container1 "$TOOLKIT"
  standin "$toolkit" libnvidia-container-tools "$TOOLKIT" "depends=libnvidia-container1 (= $TOOLKIT)"
  standin "$toolkit" nvidia-container-toolkit-base "$TOOLKIT"
  standin "$toolkit" nvidia-container-toolkit "$TOOLKIT" \
    "depends=nvidia-container-toolkit-base (= $TOOLKIT), libnvidia-container-tools (= $TOOLKIT)"
  index_repository "$cuda" "NVIDIA CUDA"
  index_repository "$toolkit"
  # As Debian's archive labels itself (http://deb.debian.org/debian/dists/bookworm/InRelease): the branch pin's first
  # record selects it by this Origin (case archive_copies); apt refuses a repository whose Origin changes later.
  index_repository "$archive" Debian Debian
  standin "$pool" cudnn9-cuda-12 "$CUDNN-1" "depends=libcudnn9-cuda-12" postinst=fail
  standin "$pool" gpuenv-test-interrupted 1.0-1 postinst=flag
}

# The CUDA repository directory inside the case's root, as seen from the host.
case_cuda_repo() { echo "$CASE_DIR/root$(cuda_dir)"; }

# apply RUN [ARGS...]: runs `gpuenv install` with the test profile in the case's root; the exit code, JSON answer and
# stderr land in $CASE_DIR/RUN.{rc,json,err} (RUN.said: both, for "the message names ..." checks), the install log
# in the root's /var/log/gpuenv/RUN.log.
apply() {
  local run=$1
  shift
  local rc=0
  in_root "$CASE_DIR/root" gpuenv install /etc/gpuenv/profile.toml --json --repo-url "file://$CUDA_REPO" \
    --toolkit-repo-url "file://$TOOLKIT_REPO" --log "/var/log/gpuenv/$run.log" "$@" \
    >"$CASE_DIR/$run.json" 2>"$CASE_DIR/$run.err" || rc=$?
  echo "$rc" >"$CASE_DIR/$run.rc"
  cat "$CASE_DIR/$run.err" "$CASE_DIR/$run.json" >"$CASE_DIR/$run.said"
  echo "$rc"
}

# The install log of RUN on the host.
run_log() { echo "$CASE_DIR/root/var/log/gpuenv/$1.log"; }

# An `apt-get ... install ...` command line in an install log.
APT_INSTALL=' \$ (.* )?apt-get( .*)? install( |$)'

# The state file in the case's root.
state_file() { echo "$CASE_DIR/root/var/lib/gpuenv/install-state.json"; }

# The state file exists and records no failed step.
state_has_no_failure() { jq -e '.failed == null' "$(state_file)" >/dev/null 2>&1; }

# Every expected package is fully installed in the case's root.
all_installed() {
  local package missing=0
  for package in $(expected_packages); do installed "$CASE_DIR/root" "$package" || missing=1; done
  return $missing
}

# The id of the plan step whose commands name PACKAGE, from a gpuenv JSON answer.
step_installing() {
  jq -r --arg p "$2" 'first(.steps[] | select(any(.commands[][]; . == $p or startswith($p + "="))) | .id) // empty' \
    "$1" 2>/dev/null || true
}

# A fresh node is brought to the profile; the same command again changes nothing.
case_fresh_and_rerun() {
  local rc
  rc=$(apply first)
  expect_equal "fresh install exits 0" "$rc" 0
  expect_equal "fresh install: outcome no_gpu (no NVIDIA PCI device in the root)" "$(json "$CASE_DIR/first.json" .outcome)" no_gpu
  expect_equal "fresh install: changed=true" "$(json "$CASE_DIR/first.json" .changed)" true
  expect "fresh install: every package installed (dpkg)" all_installed
  local part
  for part in $DRIVER_PARTS; do
    expect "fresh install: $part stays on branch 580 with 590 in the repository" \
      installed "$CASE_DIR/root" "$part" "$DRIVER_580"
  done
  expect "fresh install: nothing is held (the pin keeps the branch; a hold would also stop its fixes)" \
    test -z "$(in_root "$CASE_DIR/root" apt-mark showhold)"
  expect "fresh install: apt gives NVIDIA's repository (Label NVIDIA CUDA) priority 600" \
    contains <(in_root "$CASE_DIR/root" apt-cache policy cuda-toolkit-12-4) ' 600 file:'
  expect "fresh install: and not the archive's packages" \
    contains <(in_root "$CASE_DIR/root" apt-cache policy linux-headers-cloud-amd64) ' 500 file:'
  expect "fresh install: nvidia-persistenced is not \`systemctl enable\`d (Ubuntu's unit is static; a drop-in does it)" \
    test -z "$(grep -sx 'enable nvidia-persistenced' "$CASE_DIR/root/var/lib/gpuenv-test/systemctl.log")"
  expect "fresh install: the log shows apt-get install" contains "$(run_log first)" "$APT_INSTALL"
  expect "fresh install: the state file records no failed step" state_has_no_failure
  [ "$FAILURES" -eq "$CASE_FAILURES" ] || show_run "$CASE_DIR" first

  local dpkg_log_before history_before failures_before=$FAILURES
  dpkg_log_before=$(file_hash "$CASE_DIR/root/var/log/dpkg.log")
  history_before=$(file_hash "$CASE_DIR/root/var/log/apt/history.log")
  rc=$(apply rerun)
  expect_equal "re-run exits 0" "$rc" 0
  expect_equal "re-run: changed=false" "$(json "$CASE_DIR/rerun.json" .changed)" false
  expect "re-run: the log records the run" test -s "$(run_log rerun)"
  expect "re-run: no apt-get install in the log" lacks "$(run_log rerun)" "$APT_INSTALL"
  expect_equal "re-run: dpkg changed nothing (dpkg.log)" "$(file_hash "$CASE_DIR/root/var/log/dpkg.log")" "$dpkg_log_before"
  expect_equal "re-run: apt changed nothing (history.log)" "$(file_hash "$CASE_DIR/root/var/log/apt/history.log")" "$history_before"
  [ "$FAILURES" -eq "$failures_before" ] || show_run "$CASE_DIR" rerun
}

# A package whose postinst fails stops the run at its step with the state kept; once the repository has a fixed
# version, a re-run finishes.
case_postinst_failure() {
  local repo rc step
  repo=$(case_cuda_repo)
  rm "$repo/cudnn9-cuda-12_$CUDNN-2_"*.deb
  cp "$WORK/pool/cudnn9-cuda-12_$CUDNN-1_"*.deb "$repo/"
  index_repository "$repo"

  rc=$(apply broken)
  step=$(step_installing "$CASE_DIR/broken.json" cudnn9-cuda-12)
  expect_equal "failing postinst: exit 1" "$rc" 1
  expect "failing postinst: the plan has a step installing cudnn9-cuda-12" test -n "$step"
  expect_same "failing postinst: JSON failed_step" "$(json "$CASE_DIR/broken.json" .failed_step)" "$step"
  expect "failing postinst: the message names the step ($step)" contains "$CASE_DIR/broken.said" "step ${step:-<no step>}"
  expect_same "failing postinst: state file keeps the failed step" "$(json "$(state_file)" .failed)" "$step"
  expect "failing postinst: state file keeps the completed steps" test -n "$(json "$(state_file)" '.completed[0]')"
  expect "failing postinst: dpkg has cudnn9-cuda-12 half-configured" \
    contains <(dpkg_state "$CASE_DIR/root" cudnn9-cuda-12) '^install ok half-configured'
  [ "$FAILURES" -eq "$CASE_FAILURES" ] || show_run "$CASE_DIR" broken

  # NVIDIA publishes a fixed version; the node's package lists learn of it.
  local failures_before=$FAILURES
  cp "$WORK/tree$(cuda_dir)/cudnn9-cuda-12_$CUDNN-2_"*.deb "$repo/"
  index_repository "$repo"
  expect "fix: apt-get update sees the fixed version" in_root "$CASE_DIR/root" apt-get update -qq
  rc=$(apply fixed)
  expect_equal "after the fix: re-run exits 0" "$rc" 0
  expect "after the fix: cudnn9-cuda-12 $CUDNN-2 installed" installed "$CASE_DIR/root" cudnn9-cuda-12 "$CUDNN-2"
  expect "after the fix: every package installed (dpkg)" all_installed
  expect "after the fix: the state file records no failed step" state_has_no_failure
  [ "$FAILURES" -eq "$failures_before" ] || show_run "$CASE_DIR" fixed
}

# dpkg was interrupted before gpuenv ran (a package left half-configured): gpuenv repairs it first.
case_interrupted_dpkg() {
  local deb
  deb=$(basename "$WORK/pool/gpuenv-test-interrupted_"*.deb)
  cp "$WORK/pool/$deb" "$CASE_DIR/root/var/tmp/"
  touch "$CASE_DIR/root/var/lib/gpuenv-test/fail-postinst"
  in_root "$CASE_DIR/root" dpkg -i "/var/tmp/$deb" >/dev/null 2>&1 || true
  rm "$CASE_DIR/root/var/lib/gpuenv-test/fail-postinst"
  expect "setup: dpkg --audit reports the interrupted package" \
    contains <(in_root "$CASE_DIR/root" dpkg --audit) gpuenv-test-interrupted

  local rc
  rc=$(apply repair)
  expect_equal "interrupted dpkg: exit 0" "$rc" 0
  expect "interrupted dpkg: the log shows dpkg --configure -a" contains "$(run_log repair)" ' \$ dpkg --configure -a'
  expect "interrupted dpkg: dpkg --audit is clean" test -z "$(in_root "$CASE_DIR/root" dpkg --audit)"
  expect "interrupted dpkg: the interrupted package is configured" installed "$CASE_DIR/root" gpuenv-test-interrupted
  expect "interrupted dpkg: every package installed (dpkg)" all_installed
  [ "$FAILURES" -eq "$CASE_FAILURES" ] || show_run "$CASE_DIR" repair
}

# install_held_550 ROOT: the 550 stack as an earlier install left it: NVIDIA's source, cuda-drivers-550 with its
# unsuffixed parts at 550 (not the candidate versions, so named with them), and the hold that keeps it there.
install_held_550() {
  local keyring part versions=()
  keyring=$(cuda_dir)/cuda-keyring_1.1-1_all.deb
  for part in $DRIVER_PARTS; do versions+=("$part=$DRIVER_550"); done
  in_root "$1" dpkg -i "$keyring" >/dev/null 2>&1 || return 1
  in_root "$1" apt-get update -qq >/dev/null 2>&1 || return 1
  in_root "$1" apt-get install -y -qq cuda-drivers-550 "${versions[@]}" >/dev/null 2>&1 || return 1
  in_root "$1" apt-mark hold cuda-drivers-550 >/dev/null
}

# The node runs branch 550, held: the change to 580 is refused naming the hold and the command that releases it;
# after that command, the same run succeeds.
case_held_package() {
  local root=$CASE_DIR/root
  expect "setup: install the 550 driver and hold it" install_held_550 "$root"
  expect "setup: cuda-drivers-550 installed and held" contains <(in_root "$root" apt-mark showhold) '^cuda-drivers-550$'

  local rc
  rc=$(apply held)
  local said=$CASE_DIR/held.said
  expect_equal "held package: exit 1" "$rc" 1
  expect "held package: names cuda-drivers-550" contains "$said" 'cuda-drivers-550'
  expect "held package: gives the release command" contains "$said" 'apt-mark unhold cuda-drivers-550'
  expect "held package: the 550 driver is still installed" installed "$root" nvidia-kernel-dkms "$DRIVER_550"
  [ "$FAILURES" -eq "$CASE_FAILURES" ] || show_run "$CASE_DIR" held

  local failures_before=$FAILURES
  expect "apt-mark unhold cuda-drivers-550 (the command gpuenv named)" quietly in_root "$root" apt-mark unhold cuda-drivers-550
  rc=$(apply released)
  expect_equal "after apt-mark unhold: exit 0" "$rc" 0
  expect "after apt-mark unhold: cuda-drivers-580 is installed" installed "$root" cuda-drivers-580 "$DRIVER_580"
  expect "after apt-mark unhold: the kernel modules moved to 580, not 590" installed "$root" nvidia-kernel-dkms "$DRIVER_580"
  [ "$FAILURES" -eq "$failures_before" ] || show_run "$CASE_DIR" released
}

# The repository lacks a package the plan needs: the error names it and lists what the repository has instead.
case_missing_package() {
  local repo rc
  repo=$(case_cuda_repo)
  rm "$repo/cuda-toolkit-12-4_"*.deb
  index_repository "$repo"
  rc=$(apply missing)
  local said=$CASE_DIR/missing.said
  expect_equal "missing package: exit 1" "$rc" 1
  expect "missing package: names cuda-toolkit-12-4" contains "$said" 'cuda-toolkit-12-4'
  expect "missing package: lists the cuda-toolkit packages the repository has (12-3, 12-5)" \
    both contains "$said" 'cuda-toolkit-12-3' -- contains "$said" 'cuda-toolkit-12-5'
  expect "missing package: cuda-toolkit-12-4 is not installed" test "$(dpkg_state "$CASE_DIR/root" cuda-toolkit-12-4)" = absent
  [ "$FAILURES" -eq "$CASE_FAILURES" ] || show_run "$CASE_DIR" missing
}

# What the pin prevents, shown with the same repository and no gpuenv: apt resolves cuda-drivers-580's `>=`
# dependencies to the newest branch (the defect of NVIDIA's forum thread, reproduced with the real apt).
case_branch_without_pin() {
  local root=$CASE_DIR/root
  echo "deb [trusted=yes] file:$(cuda_dir) /" >"$root/etc/apt/sources.list.d/cuda.list"
  expect "without gpuenv: the CUDA repository is known" quietly in_root "$root" apt-get update -qq
  expect "without gpuenv: apt-get install cuda-drivers-580 succeeds" \
    quietly in_root "$root" apt-get install -y -qq cuda-drivers-580
  expect "without gpuenv: nvidia-kernel-dkms comes from branch 590" installed "$root" nvidia-kernel-dkms "$DRIVER_590"
}

# install_old_580 ROOT: branch 580 as an earlier install left it, at an older update (580.65.06) than the repository's
# newest (580.95.05): NVIDIA's source, cuda-drivers-580 and its unsuffixed parts named at that version.
install_old_580() {
  local keyring part versions=()
  keyring=$(cuda_dir)/cuda-keyring_1.1-1_all.deb
  for part in cuda-drivers-580 $DRIVER_PARTS; do versions+=("$part=$DRIVER_580_OLD"); done
  in_root "$1" dpkg -i "$keyring" >/dev/null 2>&1 || return 1
  in_root "$1" apt-get update -qq >/dev/null 2>&1 || return 1
  in_root "$1" apt-get install -y -qq "${versions[@]}" >/dev/null 2>&1
}

# An HGX node (NVSwitches on the PCI bus) whose driver is an older update of branch 580: fabric manager and NSCQ come
# at exactly the kernel module package's version (the newest 580, not 590, and not newer than the module), because
# the plan installs them in the driver's own transaction.
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
  expect "setup: branch 580 at the older update 580.65.06" install_old_580 "$root"
  expect "setup: nvidia-kernel-dkms is at 580.65.06" installed "$root" nvidia-kernel-dkms "$DRIVER_580_OLD"
  rc=$(apply fabric)
  expect_equal "fabric node exits 0" "$rc" 0
  expect_equal "fabric node: the plan has fabric manager" "$(json "$CASE_DIR/fabric.json" .fabric_manager)" true
  local module fabricmanager nscq
  module=$(dpkg_state "$root" nvidia-kernel-dkms)
  fabricmanager=$(dpkg_state "$root" nvidia-fabricmanager)
  nscq=$(dpkg_state "$root" libnvidia-nscq)
  expect_same "fabric node: nvidia-fabricmanager at exactly the kernel module package's version" \
    "${fabricmanager##* }" "${module##* }"
  expect_same "fabric node: libnvidia-nscq at exactly the kernel module package's version" "${nscq##* }" "${module##* }"
  expect "fabric node: both on branch 580's newest update, not 590" installed "$root" nvidia-fabricmanager "$DRIVER_580"
  expect "fabric node: nvidia-fabricmanager enabled (systemctl, recorded)" \
    contains "$root/var/lib/gpuenv-test/systemctl.log" '^enable nvidia-fabricmanager$'
  [ "$FAILURES" -eq "$CASE_FAILURES" ] || show_run "$CASE_DIR" fabric
}

# The distribution archive carries packages under NVIDIA's names, in the chosen branch and newer than NVIDIA's (Ubuntu:
# nvidia-dkms-580-open 580.x-0ubuntu1; Debian: nvidia-driver in non-free). The branch pin's "580.*" matches them too;
# the archive's record before it (Pin: release o=Debian, priority 100) must keep NVIDIA's packages the candidates,
# as apt_preferences(5) says: "If any specific-form records match an available package version then the first such
# record determines the priority of the package version."
ARCHIVE_580=580.126.09-1
case_archive_copies() {
  local root=$CASE_DIR/root archive rc part
  archive=$root$(archive_dir)
  for part in $DRIVER_PARTS; do standin "$archive" "$part" "$ARCHIVE_580"; done
  index_repository "$archive" Debian Debian
  expect "setup: apt sees the archive's newer 580 copies" quietly in_root "$root" apt-get update -qq
  rc=$(apply archive)
  expect_equal "archive copies: exit 0" "$rc" 0
  for part in $DRIVER_PARTS; do
    expect "archive copies: $part is NVIDIA's $DRIVER_580, not the archive's $ARCHIVE_580" \
      installed "$root" "$part" "$DRIVER_580"
  done
  expect "archive copies: apt gives the archive's copy priority 100" \
    contains <(in_root "$root" apt-cache policy nvidia-kernel-dkms) "^ +$ARCHIVE_580 100\$"
  expect "archive copies: and NVIDIA's of the branch 1000" \
    contains <(in_root "$root" apt-cache policy nvidia-kernel-dkms) "$DRIVER_580 1000\$"
  [ "$FAILURES" -eq "$CASE_FAILURES" ] || show_run "$CASE_DIR" archive
}
