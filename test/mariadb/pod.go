package mariadb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	dbmysql "github.com/dbtune/scratch-operator/controllers/mysql"
	"github.com/dbtune/scratch-operator/node-agent/mountinfo"
	"github.com/dbtune/scratch-operator/node-agent/tmpfspages"
)

// Bounds on a pod's start and stop. A start includes initializing a data directory; a stop is a
// clean InnoDB shutdown of a small server.
const (
	startTimeout = 4 * time.Minute
	stopTimeout  = 2 * time.Minute
)

// Pod is ordinal 0 of a StatefulSet with ScratchVolumes injected, run on a Host. Its claim
// directories survive Stop and Start; everything else is made fresh for every start, as for a pod
// that is deleted and created again.
type Pod struct {
	// Name is the pod's name, <StatefulSet>-0.
	Name string
	// Template is the pod template as the controller makes it. Change it before Start to run what
	// the controller would not, such as a hand-tuned layout to compare with.
	Template corev1.PodTemplateSpec
	// Plans are the injection plans, one per ScratchVolume, as the controller computes them.
	Plans []*inject.Plan
	// ConfigMaps holds what the controller writes to each ConfigMap: name, then key, then content.
	ConfigMaps map[string]map[string]string
	// Huge is the huge= option the node agent gives each ScratchVolume's memory volume, by volume
	// name, as its spec.largePages asks (absent: the kubelet's mount as it is). Change it before
	// Start to compare the kubelet's pages with the agent's.
	Huge map[string]string
	// Container names the database container; DataDir is its data directory.
	Container string
	DataDir   string

	host   *Host
	claims []corev1.PersistentVolumeClaim
	// bitnami is set for a Bitnami image, which the harness starts as its run.sh does; socket is
	// the server's socket in the container.
	bitnami *bitnamiLayout
	socket  string
	dir     string
	index   int
	runs    int

	sandbox *exec.Cmd
	exited  chan struct{}
	exitErr error
	run     *podRun
	db      *sql.DB
	// cgroup is the current run's memory cgroup; lastUsage is what the last run's was charged.
	cgroup    *memoryCgroup
	lastUsage MemoryUsage
}

// podRun is what one start of the pod made.
type podRun struct {
	dir  string
	spec *sandboxSpec
	db   containerSpec
}

// NewPod plans each ScratchVolume on sts exactly as the controller does and prepares the injected
// template to run. The StatefulSet's database image must be MariaDB of this machine's major.minor.
func (h *Host) NewPod(sts *appsv1.StatefulSet, svs ...*v1alpha1.ScratchVolume) (*Pod, error) {
	p := &Pod{
		Name:       sts.Name + "-0",
		ConfigMaps: map[string]map[string]string{},
		Huge:       map[string]string{},
		host:       h,
		claims:     sts.Spec.VolumeClaimTemplates,
	}
	for _, sv := range svs {
		plan, err := inject.NewPlan(sv, sts, inject.Namespace{})
		if err != nil {
			return nil, fmt.Errorf("failed to inject ScratchVolume %s into StatefulSet %s: %w", sv.Name, sts.Name, err)
		}
		p.Plans = append(p.Plans, plan)
		if sv.Spec.LargePages != v1alpha1.LargePagesNever {
			p.Huge[sv.VolumeName()] = tmpfspages.WithinSize
		}
		if plan.ConfigVolume != nil {
			p.ConfigMaps[plan.ConfigVolume.ConfigMap.Name] = map[string]string{plan.ConfigKey: plan.ConfigData}
		}
	}
	p.Template = inject.Inject(sts.Spec.Template, p.Plans)
	profile, err := p.findDatabase()
	if err != nil {
		return nil, err
	}
	if err := h.Server.standsInFor(profile); err != nil {
		return nil, fmt.Errorf("StatefulSet %s: %w", sts.Name, err)
	}
	p.DataDir = profile.DataDir
	p.bitnami = bitnamiFor(profile)
	p.socket = socketPath(p.bitnami)
	p.dir = filepath.Join(h.dir, p.Name)
	if err := h.register(p); err != nil {
		return nil, err
	}
	return p, nil
}

// findDatabase picks the database container the way the plans did, or by image without one.
func (p *Pod) findDatabase() (dbmysql.Profile, error) {
	if len(p.Plans) > 0 && p.Plans[0].Profile != nil {
		p.Container = p.Plans[0].Container
		return *p.Plans[0].Profile, nil
	}
	for _, c := range p.Template.Spec.Containers {
		if dbmysql.IsDatabaseImage(c.Image) {
			p.Container = c.Name
			profile, err := dbmysql.Detect(c.Image, nil)
			if err != nil {
				return dbmysql.Profile{}, fmt.Errorf("container %s: %w", c.Name, err)
			}
			return profile, nil
		}
	}
	return dbmysql.Profile{}, errors.New("the pod template has no MySQL or MariaDB container")
}

// standsInFor checks that the host's server can run in place of the profile's image: the same
// flavor and major.minor version, since option names depend on both.
func (s *Server) standsInFor(p dbmysql.Profile) error {
	v, have := p.Version, s.Version
	if p.Flavor == s.Flavor && !v.Latest && v.MinorGiven && v.Major == have.Major && v.Minor == have.Minor {
		return nil
	}
	image := fmt.Sprintf("%s %d.%d", p.Flavor, v.Major, v.Minor)
	if v.Latest {
		image = fmt.Sprintf("the newest %s", p.Flavor)
	}
	return fmt.Errorf("its image runs %s, but %s %d.%d.%d stands in for the image on this host: use %s",
		image, s.Flavor, have.Major, have.Minor, have.Patch, s.Image)
}

// DatabaseContainer returns the database container of Template, to change before Start.
func (p *Pod) DatabaseContainer() *corev1.Container {
	for i := range p.Template.Spec.Containers {
		if p.Template.Spec.Containers[i].Name == p.Container {
			return &p.Template.Spec.Containers[i]
		}
	}
	return nil
}

// Start runs the pod: fresh volumes (the tmpfs mounted anew), the init containers, the entrypoint's
// initialization of an empty data directory, then mariadbd. It returns once the server answers on
// its socket, or with the logs when it does not.
func (p *Pod) Start(ctx context.Context) error {
	if p.sandbox != nil {
		return fmt.Errorf("pod %s is already running", p.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	p.runs++
	run, err := p.prepare(filepath.Join(p.dir, strconv.Itoa(p.runs)))
	if err != nil {
		return fmt.Errorf("failed to prepare pod %s: %w", p.Name, errors.Join(err, p.removeCgroup()))
	}
	if err := p.startSandbox(run); err != nil {
		return fmt.Errorf("failed to start pod %s: %w", p.Name, errors.Join(err, p.removeCgroup()))
	}
	if err := p.linkSocket(); err != nil {
		p.kill()
		return fmt.Errorf("failed to start pod %s: %w", p.Name, err)
	}
	db, err := p.waitReady(ctx)
	if err != nil {
		err = fmt.Errorf("pod %s did not become ready: %w%s", p.Name, err, p.diagnostics())
		p.kill()
		return err
	}
	p.db = db
	return nil
}

func (p *Pod) prepare(dir string) (*podRun, error) {
	spec, db, err := p.sandboxSpec(dir)
	if err != nil {
		return nil, err
	}
	if err := p.makeCgroup(spec); err != nil {
		return nil, err
	}
	raw, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sandbox.json"), raw, 0o600); err != nil {
		return nil, err
	}
	return &podRun{dir: dir, spec: spec, db: db}, nil
}

// linkSocket gives the server's socket directory, as the running sandbox sees it, a short name: a
// unix socket's path must fit in 108 bytes, and connecting follows symbolic links.
func (p *Pod) linkSocket() error {
	sockDir, err := p.Path(path.Dir(p.socket))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.socketLink()), 0o755); err != nil {
		return err
	}
	if err := os.Remove(p.socketLink()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Symlink(sockDir, p.socketLink()); err != nil {
		return err
	}
	if sock := filepath.Join(p.socketLink(), path.Base(p.socket)); len(sock) >= len(syscall.RawSockaddrUnix{}.Path) {
		return fmt.Errorf("the server's socket would be %s, too long a path for a unix socket: use a shorter %s", sock, DirEnv)
	}
	return nil
}

func (p *Pod) socketLink() string {
	return filepath.Join(p.host.dir, "sockets", strconv.Itoa(p.index))
}

// startSandbox re-executes this binary as PID 1 of new PID and mount namespaces. The kernel kills
// it, and with it every process of the pod, should this process die first.
func (p *Pod) startSandbox(run *podRun) error {
	log, err := os.Create(filepath.Join(run.dir, "sandbox.log"))
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command(p.host.self)
	cmd.Env = []string{sandboxEnv + "=" + filepath.Join(run.dir, "sandbox.json"), "PATH=" + searchPath}
	cmd.Stdout, cmd.Stderr = log, log
	// The mount namespace is made at clone, not unshared after it: for an unshared one the Go
	// runtime makes every mount private before the sandbox runs, and the sandbox makes them slaves
	// of this namespace's instead (see runSandbox).
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
		Pdeathsig:  syscall.SIGKILL,
	}
	// The parent-death signal fires when the forking thread ends, not the process. The Go runtime
	// ends a thread only when a goroutine locked to it exits, which nothing here does, so in
	// practice it fires when this process dies.
	if err := cmd.Start(); err != nil {
		return err
	}
	p.sandbox, p.run, p.exited, p.exitErr = cmd, run, make(chan struct{}), nil
	go func(done chan struct{}) {
		p.exitErr = cmd.Wait()
		close(done)
	}(p.exited)
	return nil
}

func (p *Pod) waitReady(ctx context.Context) (*sql.DB, error) {
	db, err := p.open()
	if err != nil {
		return nil, err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := db.PingContext(pingCtx)
		cancel()
		if err == nil {
			return db, nil
		}
		select {
		case <-ctx.Done():
			_ = db.Close()
			return nil, fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
		case <-p.exited:
			_ = db.Close()
			return nil, fmt.Errorf("the sandbox exited: %w", p.exitErr)
		case <-tick.C:
		}
	}
}

// open returns a pool for the server's socket, as root.
func (p *Pod) open() (*sql.DB, error) {
	sock, err := p.Socket()
	if err != nil {
		return nil, err
	}
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "unix"
	cfg.Addr = sock
	cfg.Timeout = 5 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// DB is a connection pool to the running server, as root over its socket.
func (p *Pod) DB() *sql.DB { return p.db }

// Socket is the server's unix socket, as a path on this machine.
func (p *Pod) Socket() (string, error) {
	if p.run == nil {
		return "", fmt.Errorf("pod %s has not started", p.Name)
	}
	return filepath.Join(p.socketLink(), path.Base(p.socket)), nil
}

// Path maps a path in the running database container to one this process can open. It goes through
// the sandbox's own view of its mounts (/proc/<pid>/root), so a path on a tmpfs volume reaches the
// tmpfs, which exists in no other mount namespace.
func (p *Pod) Path(containerPath string) (string, error) {
	if !p.Running() {
		return "", fmt.Errorf("pod %s is not running", p.Name)
	}
	if !filepath.IsAbs(containerPath) {
		return "", fmt.Errorf("%q is not an absolute path", containerPath)
	}
	return filepath.Join(fmt.Sprintf("/proc/%d/root", p.sandbox.Process.Pid), p.run.db.Rootfs, containerPath), nil
}

// TmpfsOptions returns the superblock options of the running pod's memory volume named volume, as
// the sandbox's mount table shows them (size=…,huge=…).
func (p *Pod) TmpfsOptions(volume string) (string, error) {
	if !p.Running() {
		return "", fmt.Errorf("pod %s is not running", p.Name)
	}
	entries, err := mountinfo.Read(fmt.Sprintf("/proc/%d/mountinfo", p.sandbox.Process.Pid))
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.FSType == "tmpfs" && path.Base(e.MountPoint) == volume && path.Base(path.Dir(e.MountPoint)) == "volumes" {
			return e.SuperOptions, nil
		}
	}
	return "", fmt.Errorf("pod %s has no tmpfs for volume %s", p.Name, volume)
}

// ClaimDir is the directory on this machine that stands in for the pod's PersistentVolumeClaim made
// from the named volumeClaimTemplate. It outlives pod restarts.
func (p *Pod) ClaimDir(claim string) string {
	return filepath.Join(p.host.dir, "claims", claim+"-"+p.Name)
}

// Running reports whether the pod's sandbox is alive.
func (p *Pod) Running() bool {
	if p.sandbox == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Stop shuts the pod down as the kubelet would: SIGTERM to the server, a wait for its clean
// shutdown, then the end of the sandbox and with it of the tmpfs. After ctx expires it kills.
func (p *Pod) Stop(ctx context.Context) error {
	if p.sandbox == nil {
		return nil
	}
	if p.db != nil {
		_ = p.db.Close()
		p.db = nil
	}
	_ = p.sandbox.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case <-p.exited:
		err = p.exitErr
	case <-ctx.Done():
		_ = p.sandbox.Process.Kill()
		<-p.exited
		err = fmt.Errorf("did not stop in time and was killed: %w", ctx.Err())
	}
	if err != nil {
		err = fmt.Errorf("pod %s: %w%s", p.Name, err, p.diagnostics())
	}
	p.sandbox = nil
	return errors.Join(err, p.removeCgroup())
}

// Restart stops the pod and starts it again: the claim directories keep their data, the tmpfs and
// every container's writable layer start empty.
func (p *Pod) Restart(ctx context.Context) error {
	stopCtx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	if err := p.Stop(stopCtx); err != nil {
		return err
	}
	return p.Start(ctx)
}

func (p *Pod) kill() {
	if p.db != nil {
		_ = p.db.Close()
		p.db = nil
	}
	if p.sandbox != nil {
		_ = p.sandbox.Process.Kill()
		<-p.exited
		p.sandbox = nil
	}
	_ = p.removeCgroup()
}

// Log returns the output of the named container in the current (or last) run.
func (p *Pod) Log(container string) string {
	if p.run == nil {
		return ""
	}
	raw, _ := os.ReadFile(filepath.Join(p.run.dir, "logs", container+".log"))
	return string(raw)
}

// diagnostics is the tail of the sandbox's and the database container's output, for errors.
func (p *Pod) diagnostics() string {
	if p.run == nil {
		return ""
	}
	sandbox, _ := os.ReadFile(filepath.Join(p.run.dir, "sandbox.log"))
	var b strings.Builder
	if s := strings.TrimSpace(string(sandbox)); s != "" {
		fmt.Fprintf(&b, "\n--- sandbox ---\n%s", s)
	}
	for _, c := range p.run.spec.Containers {
		if out := tail(p.Log(c.Name), 25); out != "" {
			fmt.Fprintf(&b, "\n--- container %s ---\n%s", c.Name, out)
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// makeCgroup gives this run's database container a memory cgroup limited to its limits.memory, as
// a kubelet does, and tells the sandbox to run the container there.
func (p *Pod) makeCgroup(spec *sandboxSpec) error {
	var limit int64
	if q, ok := p.DatabaseContainer().Resources.Limits[corev1.ResourceMemory]; ok {
		limit = q.Value()
	}
	dir := filepath.Join(p.host.cgroupDir(), fmt.Sprintf("%s-%d", p.Name, p.runs))
	cg, err := p.host.memory.newMemoryCgroup(dir, limit)
	if err != nil {
		return err
	}
	p.cgroup = cg
	spec.Containers[len(spec.Containers)-1].MemoryCgroup = cg.procsFile()
	return nil
}

// removeCgroup keeps what the run was charged, for MemoryUsage, and removes its cgroup.
func (p *Pod) removeCgroup() error {
	if p.cgroup == nil {
		return nil
	}
	if u, err := p.cgroup.usage(); err == nil {
		p.lastUsage = u
	}
	err := p.cgroup.remove()
	p.cgroup = nil
	return err
}

// MemoryUsage is what the database container has been charged in its memory cgroup in the current
// run, or, once the pod has stopped, in the last one: the server's memory, the page cache of the
// files it wrote and the pages of the tmpfs volumes it filled, as a kubelet's cgroup counts them.
func (p *Pod) MemoryUsage() (MemoryUsage, error) {
	if p.cgroup == nil {
		return p.lastUsage, nil
	}
	return p.cgroup.usage()
}

// IOBytes is what the processes of the running database container have passed through read and
// write calls (rchar and wchar of /proc/<pid>/io, summed over the container's cgroup): files of
// every kind, sockets and pipes, whether or not they reached a device.
func (p *Pod) IOBytes() (read, written int64, err error) {
	if p.cgroup == nil {
		return 0, 0, fmt.Errorf("pod %s is not running", p.Name)
	}
	raw, err := os.ReadFile(p.cgroup.procsFile())
	if err != nil {
		return 0, 0, err
	}
	for _, pid := range strings.Fields(string(raw)) {
		io, err := os.ReadFile("/proc/" + pid + "/io")
		if errors.Is(err, os.ErrNotExist) {
			continue // gone since the cgroup was read
		}
		if err != nil {
			return 0, 0, err
		}
		for _, line := range strings.Split(string(io), "\n") {
			k, v, _ := strings.Cut(line, ": ")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "rchar":
				read += n
			case "wchar":
				written += n
			}
		}
	}
	return read, written, nil
}
