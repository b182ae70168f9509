# Builds a local apt repository of stand-in packages named as NVIDIA names them (sourced by run.sh).
#
# Each stand-in is a real .deb made with dpkg-deb from a control file and an optional payload and postinst, so apt
# and dpkg resolve, unpack, configure, hold and fail exactly as they do for NVIDIA's packages; the payloads only
# leave a marker file (and, for cuda-keyring, the apt source and pin file, as the real keyring package does).
#
# Each repository is flat (`deb [trusted=yes] file:DIR /`), with a Packages index from dpkg-scanpackages and a
# Release file written here. Three of them live under /srv in the root, each where its real counterpart would be:
#   CUDA_REPO/debian12/<x86_64|sbsa>     NVIDIA's CUDA repository (gpuenv --repo-url file://$CUDA_REPO)
#   TOOLKIT_REPO/stable/deb/<dpkg arch>  the NVIDIA Container Toolkit's (gpuenv --toolkit-repo-url file://$TOOLKIT_REPO)
#   DISTRO_ARCHIVE                       the distribution archive the node already uses (kernel headers)

CUDA_REPO=/srv/cuda-repo
TOOLKIT_REPO=/srv/toolkit-repo
DISTRO_ARCHIVE=/srv/debian-archive

# The directory name NVIDIA uses for this machine's architecture (arm64 servers are "sbsa").
nvidia_arch() {
  case "$(dpkg --print-architecture)" in
    amd64) echo x86_64 ;;
    arm64) echo sbsa ;;
    *) dpkg --print-architecture ;;
  esac
}

# standin OUTDIR NAME VERSION [depends=LIST] [conflicts=LIST] [provides=LIST] [replaces=LIST] [section=S]
#         [postinst=ok|fail|flag] [arch=all|native]
# Writes OUTDIR/NAME_VERSION_ARCH.deb. postinst=fail always fails to configure; postinst=flag fails while
# /var/lib/gpuenv-test/fail-postinst exists inside the root (how the tests leave dpkg interrupted on purpose).
standin() {
  local outdir=$1 name=$2 version=$3
  shift 3
  local depends="" conflicts="" provides="" replaces="" section=misc postinst=ok arch
  arch=$(dpkg --print-architecture)
  local option
  for option in "$@"; do
    case "$option" in
      depends=*) depends=${option#depends=} ;;
      conflicts=*) conflicts=${option#conflicts=} ;;
      provides=*) provides=${option#provides=} ;;
      replaces=*) replaces=${option#replaces=} ;;
      section=*) section=${option#section=} ;;
      postinst=*) postinst=${option#postinst=} ;;
      arch=all) arch=all ;;
      *) echo "standin: unknown option $option" >&2; return 1 ;;
    esac
  done
  local tree
  tree=$(mktemp -d "$outdir/.tree.XXXXXX")
  mkdir -p "$tree/DEBIAN" "$tree/usr/share/doc/$name"
  {
    echo "Package: $name"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: gpuenv tests <gpuenv-tests@localhost>"
    echo "Section: $section"
    echo "Priority: optional"
    [ -n "$depends" ] && echo "Depends: $depends"
    [ -n "$conflicts" ] && echo "Conflicts: $conflicts"
    [ -n "$provides" ] && echo "Provides: $provides"
    [ -n "$replaces" ] && echo "Replaces: $replaces"
    echo "Description: stand-in for $name (gpuenv install integration test)"
  } >"$tree/DEBIAN/control"
  echo "$name $version" >"$tree/usr/share/doc/$name/gpuenv-stand-in"
  case "$name" in
    cuda-keyring) keyring_payload "$tree" ;;
  esac
  case "$postinst" in
    ok) ;;
    fail) printf '#!/bin/sh\necho "%s: postinst failed (stand-in)" >&2\nexit 1\n' "$name" >"$tree/DEBIAN/postinst" ;;
    flag)
      printf '#!/bin/sh\nif [ -e /var/lib/gpuenv-test/fail-postinst ]; then\n  echo "%s: postinst failed (flag)" >&2\n  exit 1\nfi\n' \
        "$name" >"$tree/DEBIAN/postinst"
      ;;
    *) echo "standin: unknown postinst=$postinst" >&2; return 1 ;;
  esac
  [ -f "$tree/DEBIAN/postinst" ] && chmod 0755 "$tree/DEBIAN/postinst"
  dpkg-deb --root-owner-group -Zgzip --build "$tree" "$outdir/${name}_${version}_${arch}.deb" >/dev/null
  rm -rf "$tree"
}

# The directories of the three repositories, relative to the root.
cuda_dir() { echo "$CUDA_REPO/debian12/$(nvidia_arch)"; }
toolkit_dir() { echo "$TOOLKIT_REPO/stable/deb/$(dpkg --print-architecture)"; }
archive_dir() { echo "$DISTRO_ARCHIVE"; }

# The keyring and apt source that the real cuda-keyring installs for NVIDIA's repository, pointing at ours
# (NVIDIA/cuda-repo-management SIGNATURES.md lists its data.tar: the keyring and the list file; no pin file).
keyring_payload() {
  local tree=$1
  mkdir -p "$tree/etc/apt/sources.list.d" "$tree/usr/share/keyrings"
  # Not a real key: the source says [trusted=yes]. The file is there because the real package installs it.
  echo "gpuenv stand-in keyring" >"$tree/usr/share/keyrings/cuda-archive-keyring.gpg"
  echo "deb [trusted=yes] file:$(cuda_dir) /" \
    >"$tree/etc/apt/sources.list.d/cuda-debian12-$(nvidia_arch).list"
}

# index_repository DIR [LABEL] [ORIGIN]: writes Packages, Packages.gz and a Release file for the flat repository in
# DIR. NVIDIA's repositories carry "Label: NVIDIA CUDA" (the label its cuda-<distro>.pin file and gpuenv's pin select:
# https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/cuda-ubuntu2204.pin); the distribution
# archive "Origin: Debian" (http://deb.debian.org/debian/dists/bookworm/InRelease) or "Origin: Ubuntu".
index_repository() {
  local dir=$1 label=${2:-gpuenv-stand-in} origin=${3:-gpuenv-stand-in}
  (
    cd "$dir" || exit 1
    dpkg-scanpackages --multiversion . /dev/null 2>/dev/null >Packages
    gzip -9nc Packages >Packages.gz
    {
      echo "Origin: $origin"
      echo "Label: $label"
      echo "Suite: stable"
      echo "Date: $(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')"
      echo "Architectures: $(dpkg --print-architecture) all"
      echo "SHA256:"
      local file
      for file in Packages Packages.gz; do
        printf ' %s %s %s\n' "$(sha256sum "$file" | cut -d' ' -f1)" "$(stat -c %s "$file")" "$file"
      done
    } >Release
  )
}
