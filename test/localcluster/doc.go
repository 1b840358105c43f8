// Package localcluster runs a small but complete Kubernetes control plane on this machine without a
// container runtime: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and kwok in place
// of kubelets, so that StatefulSets roll out, PersistentVolumeClaims bind and pods reach Running on
// fake nodes. End-to-end tests start one per test binary; the demo starts one that outlives its
// command and is stopped later, from another process, through the state file in its directory.
//
// Every component is a child process in its own process group, writes its log to a file in the
// cluster's directory and listens on 127.0.0.1 only, on ports chosen free at start. The binaries come
// from hack/k8s-binaries.sh.
package localcluster
