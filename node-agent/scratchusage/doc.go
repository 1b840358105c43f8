// Package scratchusage measures how full each RAM scratch volume of the pods on the agent's node is.
//
// A ScratchVolume gives a StatefulSet's pods a memory emptyDir; the kubelet mounts it as a tmpfs at
// <kubelet root>/pods/<pod uid>/volumes/kubernetes.io~empty-dir/<volume name>. The agent finds the
// pods of its node that carry the operator's injection annotation, works out that directory from
// the pod's UID and the volume's name (it never lists a directory), and calls statfs(2) on it about
// once a second. statfs reads the filesystem's counters: no file in the volume is ever opened, so
// the agent can neither read a database's temporary data nor be blocked by a file in the volume.
//
// Per volume it keeps the use now, the size, the peak since it first sampled the volume, the peak
// over a sliding window (an hour by default), and how many times the volume filled up, and it
// publishes them as the dbtune_scratch_volume_* metrics with the labels namespace, pod and
// scratchvolume (the first two join with kube-state-metrics' kube_pod_* series).
package scratchusage
