#!/usr/bin/env bash
# make release VERSION=vX.Y.Z [IMAGE_REPO=ghcr.io/raftsman/raftsman]: writes, in
# _output/release/VERSION/ (RELEASE_DIR overrides it), and pushes nothing:
#   raftsman-VERSION.oci.tar   the operator's image, an OCI image layout archive tagged
#                              IMAGE_REPO:VERSION (push it with, e.g.,
#                              skopeo copy oci-archive:raftsman-VERSION.oci.tar docker://IMAGE_REPO:VERSION)
#   install.yaml               dist/install.yaml and dist/install-namespaced.yaml, from the
#   install-namespaced.yaml    same config/, with the image IMAGE_REPO:VERSION@sha256:<digest>
#   raftsman-X.Y.Z.tgz         the chart (chart version X.Y.Z, appVersion VERSION), its
#                              values naming the same image by tag and digest
#   SHA256SUMS
# The image is built like raftsman:dev (hack/cluster/lib.sh), from a binary built with
# -trimpath, and is reproducible: the same commit and Go give the same digest.
set -euo pipefail
kubectl=${KUBECTL:-} helm=${HELM:-}
source "$(dirname "$0")/cluster/lib.sh"
cd "$root"

version=${1:-}
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "usage: $0 vX.Y.Z[-suffix] (got '$version')"
repo=${IMAGE_REPO:-ghcr.io/raftsman/raftsman}
out=${RELEASE_DIR:-$OUT/release/$version}
kubectl=${kubectl:-$KUBECTL}
helm=${helm:-$BIN_DIR/helm-$HELM_VERSION/helm}
# Overlays of config/ live in the checkout: kustomize takes resources by relative path.
work=$OUT/release-work/$version
rm -rf "$work" "$out"
mkdir -p "$work/bin" "$out"

log "building the operator binary"
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/bin/raftsman" ./cmd/raftsman
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/bin/raftsman-gate" ./cmd/raftsman-gate
build_tools
archive=raftsman-$version.oci.tar
digest=$("$BIN_DIR/imagebuild" -oci -o "$out/$archive" -tag "$repo:$version" \
  -file "/raftsman=$work/bin/raftsman" -file "/raftsman-gate=$work/bin/raftsman-gate" -entrypoint /raftsman -user 65532:65532)
[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || die "imagebuild printed '$digest', not a digest"
image=$repo:$version@$digest
log "image $image"

# The installs: config/default and config/namespaced with the image replaced.
dev=$("$kubectl" kustomize config/default | sed -n 's/^ *image: \(.*\)$/\1/p')
[ "$(wc -l <<<"$dev")" = 1 ] || die "config/default names more than one image: $dev"
name=${dev%%[:@]*}
for install in default namespaced; do
  mkdir -p "$work/$install"
  cat > "$work/$install/kustomization.yaml" <<EOF
resources:
- $(realpath --relative-to="$work/$install" "$root/config/$install")
images:
- name: $name
  newName: $repo
  newTag: $version
  digest: $digest
EOF
done
"$kubectl" kustomize "$work/default" > "$out/install.yaml"
"$kubectl" kustomize "$work/namespaced" > "$out/install-namespaced.yaml"
for f in install.yaml install-namespaced.yaml; do
  [ "$(grep -cF "image: $image" "$out/$f")" = 1 ] || die "$f does not name $image once"
done

# The chart: charts/raftsman generated again from the release's installs.
mkdir -p "$work/chart"
cp -r charts/raftsman "$work/chart/"
go run ./hack/chartgen -kubectl "$kubectl" -default "$out/install.yaml" -namespaced "$out/install-namespaced.yaml" \
  -out "$work/chart/raftsman"
"$helm" lint --strict "$work/chart/raftsman" >/dev/null
"$helm" package "$work/chart/raftsman" --version "${version#v}" --app-version "$version" -d "$out" >/dev/null

(cd "$out" && sha256sum "$archive" install.yaml install-namespaced.yaml "raftsman-${version#v}.tgz" > SHA256SUMS)
rm -rf "$work"
log "release $version in ${out#"$root"/}:"
(cd "$out" && ls -l | sed 1d >&2)
