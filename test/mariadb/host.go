package mariadb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
)

// DirEnv names a directory to keep hosts' files in instead of DefaultDir.
const DirEnv = "DBTUNE_MARIADB_DIR"

// DefaultDir is where hosts keep their files unless DirEnv says otherwise. Data volumes stand in for
// persistent volumes and the comparison with tmpfs is the point of the tests, so the directory must be
// on a disk; /var/tmp is on every ordinary Linux system, where /tmp is often a tmpfs.
const DefaultDir = "/var/tmp"

// Paths of the programs the stand-in image runs. They are looked up on this machine and used at the
// same paths inside the containers' root directories, which share the machine's /usr.
var (
	serverProgram    = "mariadbd"
	installDBProgram = "mariadb-install-db"
	shellProgram     = "sh"
	searchPath       = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// Server is the database server that stands in for every pod's image on a host: this machine's
// MariaDB packages (Check), or a database test image's unpacked file system (ImageServer).
type Server struct {
	// Name tells servers apart in test names and messages: MariaDB-10.11, MySQL-9.7.
	Name string
	// Flavor and Version are the server's, as it reports them itself.
	Flavor  v1alpha1.MySQLFlavor
	Version mysql.Version
	// Image is the image reference a StatefulSet names to run this server: mariadb:10.11 for this
	// machine's packages, the test image's own reference for an image.
	Image string
	// Root is the image's file system, the lower layer of every container's root; empty for this
	// machine's packages, which containers see through read-only binds of its system directories.
	Root string
	// Entrypoint and Cmd are the image's; empty for this machine's packages, for which the harness
	// runs its own stand-in of the official image's entrypoint.
	Entrypoint, Cmd []string
	// Mariadbd, InstallDB and Shell are absolute paths inside the container (for this machine's
	// packages the same paths as here). Mariadbd is mysqld on MySQL; InstallDB is empty there.
	Mariadbd, InstallDB, Shell string
	// UID and GID are those of the mysql user the server runs as.
	UID, GID uint32
	// env is the image's environment, which a container's own follows.
	env []string
}

// Check reports what this machine lacks to run pods from its own MariaDB packages, other than
// root: the MariaDB server packages and the mysql user they create.
func Check() (*Server, error) {
	s := &Server{Flavor: v1alpha1.FlavorMariaDB}
	var missing []string
	for _, p := range []struct {
		name string
		dst  *string
	}{{serverProgram, &s.Mariadbd}, {installDBProgram, &s.InstallDB}, {shellProgram, &s.Shell}} {
		path, err := lookPath("/", p.name)
		if err != nil {
			missing = append(missing, err.Error())
			continue
		}
		*p.dst = path
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		missing = append(missing, "no mysql user")
	} else {
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		s.UID, s.GID = uint32(uid), uint32(gid)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("MariaDB is not installed (%s): apt-get install mariadb-server mariadb-client, as CI does",
			strings.Join(missing, "; "))
	}
	if err := s.readVersion(); err != nil {
		return nil, err
	}
	s.Image = fmt.Sprintf("mariadb:%d.%d", s.Version.Major, s.Version.Minor)
	return s, nil
}

// lookPath finds a program in the standard directories of the file system at root and insists that
// it lives under /usr, the only tree containers share with this machine (/bin and /sbin are links
// into it on merged-/usr systems and bound read-only otherwise).
func lookPath(root, name string) (string, error) {
	for _, dir := range filepath.SplitList(searchPath) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(filepath.Join(root, p)); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in %s", name, searchPath)
}

// versionPattern matches what mariadbd and mysqld print for --version: "Ver 11.8.9-MariaDB-1 for
// debian-linux-gnu", "Ver 9.7.4 for Linux on x86_64 (Debian)".
var versionPattern = regexp.MustCompile(`Ver (\d+\.\d+\.\d+)(-MariaDB)?`)

// readVersion asks the server itself, inside its root for an image.
func (s *Server) readVersion() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Mariadbd, "--no-defaults", "--version")
	if s.Root != "" {
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: s.Root}
		cmd.Dir, cmd.Env = "/", []string{"PATH=" + searchPath}
	}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("failed to run %s --version: %w", s.Mariadbd, err)
	}
	m := versionPattern.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("%s --version printed no server version: %q", s.Mariadbd, out)
	}
	if (len(m[2]) > 0) != (s.Flavor == v1alpha1.FlavorMariaDB) {
		return fmt.Errorf("%s --version printed %q, not a %s server", s.Mariadbd, out, s.Flavor)
	}
	if s.Version, err = mysql.ParseVersion(string(m[1])); err != nil {
		return err
	}
	s.Name = fmt.Sprintf("%s-%d.%d", s.Flavor, s.Version.Major, s.Version.Minor)
	return nil
}

// Host runs pods on this machine. Everything it creates lives under Dir; Close stops the pods and
// removes it.
type Host struct {
	// Server is the database server that runs every pod.
	Server *Server

	dir    string
	self   string
	memory memoryController

	mu   sync.Mutex
	pods map[string]*Pod
}

// NewHost checks the machine and creates a fresh directory under base (DirEnv or DefaultDir when
// empty) for pods run by this machine's MariaDB. base must not be a tmpfs: claim directories there
// stand in for persistent disks.
func NewHost(base string) (*Host, error) {
	server, err := Check()
	if err != nil {
		return nil, err
	}
	return NewHostFor(server, base)
}

// NewHostFor is NewHost for pods run by server, this machine's MariaDB (Check) or a database test
// image (ImageServer).
func NewHostFor(server *Server, base string) (*Host, error) {
	if base == "" {
		base = os.Getenv(DirEnv)
	}
	if base == "" {
		base = DefaultDir
	}
	if err := checkDisk(base); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("failed to find this program to run sandboxes: %w", err)
	}
	memory, err := findMemoryController()
	if err != nil {
		return nil, err
	}
	if err := memory.sweepStaleCgroups(); err != nil {
		return nil, err
	}
	sweepStale(base)
	dir, err := os.MkdirTemp(base, hostDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("failed to create the host directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	return &Host{Server: server, dir: dir, self: self, memory: memory, pods: map[string]*Pod{}}, nil
}

const (
	hostDirPrefix = "dbtune-mariadb-"
	// ownerFile holds the PID of the process that made a host directory, so that a later host can
	// remove the directories of processes killed before they cleaned up (by a test timeout, say).
	// Their sandboxes died with them, and their mounts with the sandboxes.
	ownerFile = "owner"
)

func sweepStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, hostDirPrefix+"*"))
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || pid <= 0 || processExists(pid) {
			continue
		}
		if mounts, err := mountsBelow(dir); err == nil && len(mounts) == 0 {
			_ = os.RemoveAll(dir)
		}
	}
}

func processExists(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

func checkDisk(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("failed to inspect %s: %w", dir, err)
	}
	if st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
		return fmt.Errorf("%s is in RAM (tmpfs), so claim directories there would not stand in for disks: set %s to a directory on a disk",
			dir, DirEnv)
	}
	return nil
}

// cgroupDir is the host's memory cgroup, below which each pod run gets its own.
func (h *Host) cgroupDir() string { return h.memory.hostDir(os.Getpid(), filepath.Base(h.dir)) }

// Dir is the directory holding the host's volumes, container root directories and logs.
func (h *Host) Dir() string { return h.dir }

// Close stops every pod and removes the host's memory cgroup and directory. It refuses to remove
// the directory while a mount remains below it in this process's namespace, which would mean a
// sandbox leaked one: removing through it could delete the machine's files.
func (h *Host) Close() error {
	h.mu.Lock()
	pods := make([]*Pod, 0, len(h.pods))
	for _, p := range h.pods {
		pods = append(pods, p)
	}
	h.mu.Unlock()
	var errs []error
	for _, p := range pods {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		if err := p.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	if err := h.memory.removeHostDir(h.cgroupDir()); err != nil {
		errs = append(errs, err)
	}
	mounts, err := mountsBelow(h.dir)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if len(mounts) > 0 {
		return errors.Join(append(errs, fmt.Errorf("not removing %s: mounts remain below it: %s", h.dir, strings.Join(mounts, ", ")))...)
	}
	if err := os.RemoveAll(h.dir); err != nil {
		errs = append(errs, fmt.Errorf("failed to remove %s: %w", h.dir, err))
	}
	return errors.Join(errs...)
}

// mountsBelow lists the mount points at or below dir in this process's mount namespace.
func mountsBelow(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("failed to read the mount table: %w", err)
	}
	defer func() { _ = f.Close() }()
	var found []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			found = append(found, mp)
		}
	}
	return found, sc.Err()
}

// unescapeMountPath undoes the octal escapes mountinfo uses for space, tab, newline and backslash.
func unescapeMountPath(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

func (h *Host) register(p *Pod) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.pods[p.Name]; dup {
		return fmt.Errorf("pod %s already exists on this host", p.Name)
	}
	h.pods[p.Name] = p
	p.index = len(h.pods)
	return nil
}
