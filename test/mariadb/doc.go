// Package mariadb runs a StatefulSet's pod template, as the controller's injection builder produces
// it, as real processes on this machine, so that tests can prove that what the operator patches in
// works for a real MariaDB server.
//
// A Host keeps everything under one directory on the machine's disk. A Pod takes a StatefulSet and
// ScratchVolumes, runs inject.NewPlan and inject.Inject, and maps the resulting template onto the
// machine:
//
//   - a memory emptyDir becomes a tmpfs mounted with size= its sizeLimit;
//   - another emptyDir, and each volumeClaimTemplate, becomes a plain directory on the disk; a claim's
//     directory outlives pod restarts as a PersistentVolumeClaim does;
//   - a ConfigMap volume becomes a directory holding the rendered drop-in the controller would write;
//   - the init containers run first, then the database container: a stand-in for the image's
//     entrypoint (initialize an empty data directory) followed by mariadbd with the container's args;
//   - the database container runs in a memory cgroup (v2, or v1's memory controller) limited to its
//     limits.memory, so that its tmpfs pages and the page cache of the files it writes are charged
//     and bounded as a kubelet's cgroup would charge them (Pod.MemoryUsage reports the charge).
//
// The image is stood in for by the machine's MariaDB packages: the harness refuses a StatefulSet whose
// image names another flavor or major.minor version, since option names depend on both.
//
// Each run of a pod is a sandbox: this binary re-executed (see RunSandboxIfRequested) in new mount
// and PID namespaces. There it mounts the tmpfs volumes, builds for each container a root directory
// from the machine's /usr and /etc (read-only) plus the container's volume mounts at their mount
// paths, and starts the container's processes chrooted into it. The drop-in's absolute paths
// (/var/lib/mysql-tmp, /var/lib/mysql/.dbtune-scratch.sst/…) are therefore real for mariadbd while the
// machine's own /var/lib/mysql is never touched, and no mount is ever made in the caller's namespace:
// when the sandbox ends, for whatever reason, the kernel unmounts its tmpfs and kills what it
// started, exactly as a pod's memory emptyDir goes with the pod. A pod's cgroup is removed when its
// run stops; those of a process killed before it could are named after that process and removed by
// the next host.
package mariadb
