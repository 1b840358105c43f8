package mariadb

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// volume is a pod volume as it exists on this machine.
type volume struct {
	host     string
	tmpfs    bool
	readOnly bool
}

// sandboxSpec maps the pod template onto this machine for one run in dir: the volumes, then each
// init container, then the database container. Other containers (metrics sidecars and the like)
// are not run.
func (p *Pod) sandboxSpec(dir string) (*sandboxSpec, containerSpec, error) {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, containerSpec{}, err
	}
	vols, tmpfs, err := p.makeVolumes(dir)
	if err != nil {
		return nil, containerSpec{}, err
	}
	spec := &sandboxSpec{Tmpfs: tmpfs}
	db := p.DatabaseContainer()
	for i := range p.Template.Spec.InitContainers {
		c := &p.Template.Spec.InitContainers[i]
		if c.Image != db.Image {
			return nil, containerSpec{}, fmt.Errorf("init container %s runs image %s: the harness can only stand in for the database image %s",
				c.Name, c.Image, db.Image)
		}
		cs, err := p.initContainer(dir, c, vols)
		if err != nil {
			return nil, containerSpec{}, err
		}
		spec.Containers = append(spec.Containers, cs)
	}
	cs, err := p.databaseContainer(dir, db, vols)
	if err != nil {
		return nil, containerSpec{}, err
	}
	spec.Containers = append(spec.Containers, cs)
	return spec, cs, nil
}

func (p *Pod) initContainer(dir string, c *corev1.Container, vols map[string]volume) (containerSpec, error) {
	cs, err := p.container(dir, c, vols)
	if err != nil {
		return cs, err
	}
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		return cs, fmt.Errorf("init container %s has no command: the harness cannot know its image's entrypoint", c.Name)
	}
	if !path.IsAbs(argv[0]) {
		if argv[0], err = lookPath(p.host.Server.root(), argv[0]); err != nil {
			return cs, fmt.Errorf("init container %s: %w", c.Name, err)
		}
	}
	env, err := p.env(c)
	if err != nil {
		return cs, err
	}
	uid, gid := p.runAs(c)
	cs.Processes = []processSpec{{Argv: argv, Env: env, UID: uid, GID: gid, Groups: p.fsGroups()}}
	return cs, nil
}

// env is the environment a container's processes start with: the image's, then the container's.
func (p *Pod) env(c *corev1.Container) ([]string, error) {
	env, err := baseEnv(c)
	if err != nil || p.host.Server.Root == "" {
		return env, err
	}
	return append(append([]string{}, p.host.Server.env...), env[1:]...), nil
}

// databaseContainer runs the stand-in entrypoint, then mariadbd with the container's arguments as
// the mysql user, which is what the official image does when the container runs as root. A
// container that asks for another user keeps it for the server.
func (p *Pod) databaseContainer(dir string, c *corev1.Container, vols map[string]volume) (containerSpec, error) {
	cs, err := p.container(dir, c, vols)
	if err != nil {
		return cs, err
	}
	env, err := p.env(c)
	if err != nil {
		return cs, err
	}
	s := p.host.Server
	uid, gid := p.runAs(c)
	if s.Root != "" && p.bitnami == nil {
		// The image's own entrypoint initializes the data directory and drops to its user.
		cs.Processes = []processSpec{{Argv: s.command(c), Env: env, UID: uid, GID: gid, Groups: p.fsGroups()}}
		return cs, nil
	}
	if p.bitnami != nil {
		if uid == 0 {
			uid, gid = s.UID, s.GID
		}
		cs.Processes, err = p.bitnamiProcesses(c, env, uid, gid, p.fsGroups())
		return cs, err
	}
	args, err := serverArgs(c)
	if err != nil {
		return cs, err
	}
	if uid == 0 {
		uid, gid = s.UID, s.GID
	}
	owner := fmt.Sprintf("%d:%d", uid, gid)
	cs.Processes = []processSpec{
		{Argv: []string{s.Shell, "-c", prepareScript, "entrypoint", owner, p.DataDir}, Env: env},
		{Argv: append([]string{s.Shell, "-c", initializeScript, "entrypoint", p.DataDir}, args...), Env: env, UID: uid, GID: gid},
		{Argv: append([]string{s.Mariadbd}, args...), Env: env, UID: uid, GID: gid},
	}
	return cs, nil
}

// fsGroups is the pod's fsGroup as a supplementary group of every process, as the kubelet adds it.
func (p *Pod) fsGroups() []uint32 {
	if sc := p.Template.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		return []uint32{uint32(*sc.FSGroup)}
	}
	return nil
}

// runAs is the user and group a container's processes start as: its security context, the pod's,
// or root as in an image that names no user.
func (p *Pod) runAs(c *corev1.Container) (uid, gid uint32) {
	var user, group *int64
	if sc := p.Template.Spec.SecurityContext; sc != nil {
		user, group = sc.RunAsUser, sc.RunAsGroup
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			user = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			group = sc.RunAsGroup
		}
	}
	if user != nil {
		uid = uint32(*user)
	}
	if group != nil {
		gid = uint32(*group)
	}
	return uid, gid
}

// container gives c its root directory (the image's, or this machine's with the stand-in image's
// /etc/mysql) and its volume mounts.
func (p *Pod) container(dir string, c *corev1.Container, vols map[string]volume) (containerSpec, error) {
	base := filepath.Join(dir, "containers", c.Name)
	cs := containerSpec{
		Name:   c.Name,
		Rootfs: filepath.Join(base, "rootfs"),
		Image:  p.host.Server.Root,
		Log:    filepath.Join(dir, "logs", c.Name+".log"),
	}
	if cs.Image == "" {
		image := filepath.Join(base, "image", "etc-mysql")
		if err := writeImage(image, p.DataDir); err != nil {
			return containerSpec{}, err
		}
		cs.Binds = []bindSpec{{Source: image, Target: imageConfigDir}}
	} else {
		hosts, err := writeHosts(base)
		if err != nil {
			return containerSpec{}, err
		}
		cs.Binds = []bindSpec{{Source: hosts, Target: "/etc/hosts"}}
	}
	for _, m := range c.VolumeMounts {
		b, err := mountSource(c.Name, m, vols)
		if err != nil {
			return containerSpec{}, err
		}
		cs.Binds = append(cs.Binds, b)
	}
	return cs, nil
}

func mountSource(container string, m corev1.VolumeMount, vols map[string]volume) (bindSpec, error) {
	v, ok := vols[m.Name]
	switch {
	case !ok:
		return bindSpec{}, fmt.Errorf("container %s mounts volume %q, which the pod does not have", container, m.Name)
	case m.SubPathExpr != "":
		return bindSpec{}, fmt.Errorf("container %s mounts %q with subPathExpr, which the harness does not expand", container, m.Name)
	case !path.IsAbs(m.MountPath) || path.Clean(m.MountPath) != m.MountPath || m.MountPath == "/":
		return bindSpec{}, fmt.Errorf("container %s mounts %q at %q, not a clean absolute path", container, m.Name, m.MountPath)
	}
	src := v.host
	if m.SubPath != "" {
		if !filepath.IsLocal(m.SubPath) {
			return bindSpec{}, fmt.Errorf("container %s: subPath %q leaves volume %q", container, m.SubPath, m.Name)
		}
		if v.tmpfs {
			return bindSpec{}, fmt.Errorf("container %s: subPath into the memory volume %q is not supported by the harness", container, m.Name)
		}
		src = filepath.Join(src, m.SubPath)
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) && !v.readOnly {
			// The kubelet creates a missing subPath directory with the volume root's permissions.
			perm := os.FileMode(0o755)
			if st, err := os.Stat(v.host); err == nil {
				perm = st.Mode().Perm()
			}
			if err := os.MkdirAll(src, perm); err != nil {
				return bindSpec{}, err
			}
			if err := os.Chmod(src, perm); err != nil {
				return bindSpec{}, err
			}
		}
	}
	return bindSpec{Source: src, Target: m.MountPath, ReadOnly: m.ReadOnly || v.readOnly}, nil
}

// makeVolumes creates the pod's volumes for a run in dir. emptyDirs are made world-writable as the
// kubelet makes them; claim directories are created once and kept.
func (p *Pod) makeVolumes(dir string) (map[string]volume, []tmpfsSpec, error) {
	vols := map[string]volume{}
	var tmpfs []tmpfsSpec
	for _, v := range p.Template.Spec.Volumes {
		host := filepath.Join(dir, "volumes", v.Name)
		switch {
		case v.EmptyDir != nil:
			if err := worldWritableDir(host); err != nil {
				return nil, nil, err
			}
			vols[v.Name] = volume{host: host, tmpfs: v.EmptyDir.Medium == corev1.StorageMediumMemory}
			if v.EmptyDir.Medium != corev1.StorageMediumMemory {
				continue
			}
			if v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Value() <= 0 {
				return nil, nil, fmt.Errorf("memory volume %q has no sizeLimit: the tmpfs would get half of this machine's RAM", v.Name)
			}
			tmpfs = append(tmpfs, tmpfsSpec{Path: host, Size: v.EmptyDir.SizeLimit.Value(), Huge: p.Huge[v.Name]})
		case v.ConfigMap != nil:
			if err := p.writeConfigMap(host, v.ConfigMap); err != nil {
				return nil, nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			vols[v.Name] = volume{host: host, readOnly: true}
		default:
			return nil, nil, fmt.Errorf("volume %q: the harness runs emptyDir, configMap and volumeClaimTemplate volumes only", v.Name)
		}
	}
	// The StatefulSet controller lets a claim template win over a template volume of the same name.
	for _, c := range p.claims {
		host := p.ClaimDir(c.Name)
		if err := os.MkdirAll(host, 0o755); err != nil {
			return nil, nil, err
		}
		if err := p.applyFSGroup(host); err != nil {
			return nil, nil, err
		}
		vols[c.Name] = volume{host: host}
	}
	return vols, tmpfs, nil
}

// applyFSGroup gives a claim to the pod's fsGroup as the kubelet's volume ownership management
// does: group-owned, group-writable, and set-group-ID so that new files inherit the group.
func (p *Pod) applyFSGroup(dir string) error {
	groups := p.fsGroups()
	if len(groups) == 0 {
		return nil
	}
	if err := os.Chown(dir, -1, int(groups[0])); err != nil {
		return err
	}
	return os.Chmod(dir, 0o775|os.ModeSetgid)
}

func worldWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	return os.Chmod(dir, 0o777)
}

// writeConfigMap writes the volume's items from the ConfigMap the controller would have created. A
// missing optional ConfigMap gives an empty volume, as in Kubernetes.
func (p *Pod) writeConfigMap(dir string, src *corev1.ConfigMapVolumeSource) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, ok := p.ConfigMaps[src.Name]
	if !ok {
		if src.Optional != nil && *src.Optional {
			return nil
		}
		return fmt.Errorf("ConfigMap %s does not exist", src.Name)
	}
	mode := os.FileMode(0o644)
	if src.DefaultMode != nil {
		mode = os.FileMode(*src.DefaultMode)
	}
	items := src.Items
	if len(items) == 0 {
		for k := range data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		content, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("ConfigMap %s has no key %q", src.Name, it.Key)
		}
		if !filepath.IsLocal(it.Path) {
			return fmt.Errorf("ConfigMap item path %q leaves the volume", it.Path)
		}
		m := mode
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		f := filepath.Join(dir, it.Path)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f, []byte(content), m); err != nil {
			return err
		}
		if err := os.Chmod(f, m); err != nil {
			return err
		}
	}
	return nil
}

// writeHosts writes the /etc/hosts a kubelet gives every container, which an image does not carry:
// localhost, and the host name the container sees (the sandbox shares this machine's), which
// mariadb-install-db insists on resolving.
func writeHosts(dir string) (string, error) {
	name, err := os.Hostname()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "hosts")
	content := fmt.Sprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t%s\n", name)
	return path, os.WriteFile(path, []byte(content), 0o644)
}
