// Package realnode adds a real node to a local control plane (test/localcluster): containerd with
// runc and the CNI bridge plugin, and a kubelet, so that pods run in real containers beside the
// fake kwok nodes, with real volumes, cgroups and memory limits.
//
// A real node changes the machine it runs on: kernel settings, mounts, cgroups, a network bridge,
// a few fixed directories. Start records each change in a state file in the node's directory before
// making it, and Stop undoes all of them; when a test binary is killed before it could stop its node,
// the next Start undoes them first. Only one real node runs on a machine at a time.
//
// Everything needs root, the binaries of `hack/k8s-binaries.sh node` and Debian's runc,
// containernetworking-plugins and busybox-static; the MariaDB test also needs mmdebstrap the first
// time, to build its image from Debian's archive (hack/images -database mariadb, cached in the
// user's cache directory). Its tests carry the build tag realnode, so that `go test ./...` runs none of
// them beside the other packages: `make test` runs them afterwards, on their own, as does
// `make test-realnode`.
package realnode
