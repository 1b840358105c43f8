package inject

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
)

// Plan is everything one ScratchVolume adds to one StatefulSet.
type Plan struct {
	// ScratchVolume is the name of the ScratchVolume.
	ScratchVolume string
	// Container is the container that gets the volume.
	Container string

	// Volume is the memory-backed emptyDir and Mount its mount in Container.
	Volume corev1.Volume
	Mount  corev1.VolumeMount

	// ConfigVolume and ConfigMount deliver the my.cnf drop-in (ConfigFile injection only);
	// ConfigKey and ConfigData are its entry in the ScratchVolume's ConfigMap.
	ConfigVolume *corev1.Volume
	ConfigMount  *corev1.VolumeMount
	ConfigKey    string
	ConfigData   string

	// DiskVolume and DiskMount hold the must-survive directories on the node's disk when the data
	// directory is on no persistent volume (nil otherwise).
	DiskVolume *corev1.Volume
	DiskMount  *corev1.VolumeMount

	// Args are the flags appended to Container's args (Args injection only).
	Args []string

	// ExtraFlags are the flags added to the image's extra-flags environment variable (ExtraFlags
	// injection only).
	ExtraFlags *EnvFlags

	// Injection is how the settings reach the server (MySQLTmpdir only): spec.mysql.injection, or
	// the mode the image calls for.
	Injection v1alpha1.InjectionMode

	// Locations say where each kind of temporary data goes (MySQLTmpdir only).
	Locations []v1alpha1.TempLocation
	// TempSpace is the server's limit on temporary space and what happens when the volume fills
	// (MySQLTmpdir only).
	TempSpace *v1alpha1.TempSpaceStatus

	// Init creates, before the server starts, the directories that must stay on the persistent
	// volume; nil when there are none to create.
	Init *corev1.Container

	// Reserve is the memory added to Container's request and limit (Reserve accounting only).
	Reserve *resource.Quantity

	// Profile and Layout describe the database (MySQLTmpdir only).
	Profile *mysql.Profile
	Layout  *mysql.Layout

	// Notes are what the user should know; Hash covers everything injected.
	Notes []Note
	Hash  string
}

// NewPlan decides what sv adds to sts. It reads the pod template as the user wrote it (ignoring
// whatever is already injected), so planning an injected StatefulSet gives the same plan again. The
// error is a *Problem when the user must change something. ns holds the rules of the namespace
// that the pods must pass: what the plan adds is made to pass them, or refused.
func NewPlan(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, ns Namespace) (*Plan, error) {
	if err := checkSpec(sv); err != nil {
		return nil, err
	}
	// Only the template is copied (Strip changes its copy): planning never writes the rest of the
	// StatefulSet, and a target of a selector is planned on every reconcile that cannot reuse its
	// last decision, so a copy of the whole object each time is garbage a fleet pays for.
	user := *sts
	user.Spec.Template = Strip(sts.Spec.Template)
	pod := &user.Spec.Template.Spec
	c, err := selectContainer(sv, pod)
	if err != nil {
		return nil, err
	}
	p := &Plan{ScratchVolume: sv.Name, Container: c.Name}
	p.Volume, p.Mount = scratchVolume(sv)
	if err := checkCollisions(pod, c, p.Volume.Name, p.Mount.MountPath); err != nil {
		return nil, err
	}
	reserve, memNotes, err := memoryBudget(sv, pod, ns.asAdmitted(c, sv.Spec.Memory.Accounting))
	if err != nil {
		return nil, err
	}
	if err := ns.checkReserve(pod, c, reserved(pod, c, reserve), newlyReserved(sv, sts, reserve), replicas(sts)); err != nil {
		return nil, err
	}
	p.Reserve = reserve
	p.Notes = append(p.Notes, memNotes...)
	if sv.Spec.Purpose == v1alpha1.PurposeMySQLTmpdir {
		if err := p.planMySQL(sv, &user, c, ns, initContainerOf(sv, sts)); err != nil {
			return nil, err
		}
	}
	if err := p.checkNames(pod, c); err != nil {
		return nil, err
	}
	p.Hash = p.hash()
	return p, nil
}

// checkNames refuses a plan whose other volumes, mounts or init container take a name or path the
// user already uses: the API server would reject the apply, and worse, the user's entry would later
// be taken for ours.
func (p *Plan) checkNames(pod *corev1.PodSpec, c *corev1.Container) error {
	var vols []*corev1.Volume
	var mounts []*corev1.VolumeMount
	for _, pair := range []struct {
		v *corev1.Volume
		m *corev1.VolumeMount
	}{{p.ConfigVolume, p.ConfigMount}, {p.DiskVolume, p.DiskMount}} {
		if pair.v != nil {
			vols, mounts = append(vols, pair.v), append(mounts, pair.m)
		}
	}
	for _, v := range vols {
		if err := checkCollisions(pod, c, v.Name, ""); err != nil {
			return err
		}
	}
	for _, m := range mounts {
		for _, um := range c.VolumeMounts {
			if path.Clean(um.MountPath) == m.MountPath {
				return problemf(v1alpha1.ReasonMountPathInUse,
					"container %s already mounts volume %q at %s, where the ScratchVolume mounts its %s: free that path",
					c.Name, um.Name, m.MountPath, m.Name)
			}
		}
	}
	if p.Init != nil {
		for _, ic := range pod.InitContainers {
			if ic.Name == p.Init.Name {
				return problemf(v1alpha1.ReasonVolumeNameInUse,
					"the pod template already has an init container named %q: rename it, or rename the ScratchVolume", ic.Name)
			}
		}
	}
	return nil
}

func scratchVolume(sv *v1alpha1.ScratchVolume) (corev1.Volume, corev1.VolumeMount) {
	// Canonical bytes: 536870912 and 512Mi are the same volume and must give the same hash.
	size := *resource.NewQuantity(sv.Spec.Size.Value(), resource.BinarySI)
	v := corev1.Volume{
		Name: sv.VolumeName(),
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: &size,
		}},
	}
	return v, corev1.VolumeMount{Name: v.Name, MountPath: sv.EffectiveMountPath()}
}

// checkCollisions refuses a volume name or mount path the user already uses.
func checkCollisions(pod *corev1.PodSpec, c *corev1.Container, volume, mountPath string) error {
	for _, v := range pod.Volumes {
		if volume != "" && v.Name == volume {
			return problemf(v1alpha1.ReasonVolumeNameInUse,
				"the pod template already has a volume named %q: rename it, or rename the ScratchVolume", volume)
		}
	}
	for _, m := range c.VolumeMounts {
		if mountPath != "" && path.Clean(m.MountPath) == mountPath {
			return problemf(v1alpha1.ReasonMountPathInUse,
				"container %s already mounts volume %q at %s: set spec.mountPath to a free directory", c.Name, m.Name, mountPath)
		}
	}
	return nil
}

// planMySQL adds the database side: profile, layout, drop-in or flags, and the init container.
// current is the init container the StatefulSet carries, if any.
func (p *Plan) planMySQL(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, c *corev1.Container, ns Namespace, current *corev1.Container) error {
	profile, err := mysql.Detect(c.Image, sv.Spec.MySQL)
	if err != nil {
		var unknown *mysql.UnknownImageError
		if errors.As(err, &unknown) {
			return problemf(v1alpha1.ReasonUnknownImage, "container %s: %v", c.Name, err)
		}
		var invalid *mysql.SpecError
		if errors.As(err, &invalid) {
			// The API refuses it today, with this message; it was stored before the rule.
			return problemf(v1alpha1.ReasonInvalidSpec, "%s (it is %q)", invalid.Message, invalid.Value)
		}
		return fmt.Errorf("failed to classify image %s: %w", c.Image, err)
	}
	data := findDataVolume(sts, c, profile.DataDir)
	if data.Mount != nil && !paths.Within(profile.PersistentRoot, data.Mount.MountPath) {
		// A chart that mounts its claim right at the data directory leaves no room beside it.
		profile.PersistentRoot = profile.DataDir
	}
	p.Profile = &profile
	if n := data.note(c.Name, profile.DataDir); n != nil {
		p.Notes = append(p.Notes, *n)
	}
	if err := checkReservedDirs(profile, c, p.Mount.MountPath); err != nil {
		return err
	}
	layout := mysql.DefaultLayout(profile, p.Mount.MountPath, sv.Spec.MySQL)
	layout.LimitTempSpace(profile, sv.Spec.Size.Value(), sv.Spec.MySQL)
	if data.Mount == nil || data.Memory {
		// No disk under the data directory: without a volume of our own, the replica load directory
		// would default to tmpdir, on the RAM volume. A disk-backed emptyDir lives as long as the data.
		if err := p.planDiskFallback(sv, c, &layout, profile); err != nil {
			return err
		}
	}
	if err := layout.Validate(profile); err != nil {
		return problemf(v1alpha1.ReasonInvalidLayout, "%v", err)
	}
	if err := p.checkPersistentDirs(layout, data); err != nil {
		return err
	}
	p.Layout = &layout
	if err := p.planDelivery(sv, sts, c, profile, layout); err != nil {
		return err
	}
	if p.DiskVolume == nil {
		p.Init = initContainer(sv, c, data.Mount, layout.PersistentDirs(), ns.initResources(&sts.Spec.Template.Spec, c, current))
	}
	p.Locations = mysql.Locations(profile, layout, p.Injection == v1alpha1.InjectionConfigFile)
	p.TempSpace = tempSpace(layout, profile)
	for _, n := range []*Note{sessionTempNote(sv, profile, c.Name), sessionShareNote(sv, profile, c.Name)} {
		if n != nil {
			p.Notes = append(p.Notes, *n)
		}
	}
	return nil
}

// tempSpace is the status of the server's limit on temporary space under layout.
func tempSpace(l mysql.Layout, profile mysql.Profile) *v1alpha1.TempSpaceStatus {
	ts := &v1alpha1.TempSpaceStatus{WhenFull: mysql.WhenFull(profile, l)}
	if l.TempSpaceLimit > 0 {
		ts.Limit = resource.NewQuantity(l.TempSpaceLimit, resource.BinarySI)
	}
	if l.SessionTempSpaceLimit > 0 {
		ts.SessionLimit = resource.NewQuantity(l.SessionTempSpaceLimit, resource.BinarySI)
	}
	return ts
}

// checkReservedDirs refuses a mount path at, above or inside a directory the image needs as it is
// (Bitnami's /opt/bitnami/<db>/tmp, which holds the socket and the pid file).
func checkReservedDirs(profile mysql.Profile, c *corev1.Container, mountPath string) error {
	for _, d := range profile.ReservedDirs {
		if paths.Within(mountPath, d) || paths.Within(d, mountPath) {
			return problemf(v1alpha1.ReasonMountPathInUse,
				"container %s keeps its socket and pid file in %s, which the scratch volume at %s would hide: set spec.mountPath to another directory, such as %s",
				c.Name, d, mountPath, v1alpha1.DefaultMySQLTmpdirMountPath)
		}
	}
	return nil
}

// sessionTempNote explains a spec.mysql.sessionTempTablespaces: Memory that has nothing to move.
func sessionTempNote(sv *v1alpha1.ScratchVolume, profile mysql.Profile, container string) *Note {
	if sv.Spec.MySQL == nil || sv.Spec.MySQL.SessionTempTablespaces != v1alpha1.TempTablespacesMemory || profile.SessionTempTablespaces {
		return nil
	}
	return &Note{Reason: v1alpha1.ReasonNoSessionTempTablespaces, Message: fmt.Sprintf(
		"container %s runs %s %s, which has no session temporary tablespaces (MySQL 8.0.13 and later have them); its on-disk internal temporary tables go to %s",
		container, profile.Flavor, profile.Version, profile.InternalTmpTables)}
}

// sessionShareNote explains a spec.mysql.sessionTempSpacePercent that has no limit to share.
func sessionShareNote(sv *v1alpha1.ScratchVolume, profile mysql.Profile, container string) *Note {
	m := sv.Spec.MySQL
	if m == nil || m.SessionTempSpacePercent == nil {
		return nil
	}
	switch {
	case !profile.TempSpaceLimit:
		return &Note{Reason: v1alpha1.ReasonNoSessionTempSpaceLimit, Message: fmt.Sprintf(
			"spec.mysql.sessionTempSpacePercent has no effect on container %s: %s %s has no limit of its own on temporary space (MariaDB 11.5.1 and later have max_tmp_session_space_usage)",
			container, profile.Flavor, profile.Version)}
	case m.TempSpaceLimit == v1alpha1.TempSpaceLimitNone:
		return &Note{Reason: v1alpha1.ReasonNoSessionTempSpaceLimit, Message: fmt.Sprintf(
			"spec.mysql.sessionTempSpacePercent has no effect on container %s: spec.mysql.tempSpaceLimit is None, so the server has no limit to share", container)}
	}
	return nil
}

// checkPersistentDirs requires every must-survive directory to be on the volume that holds them (the
// data volume, or our disk fallback): anywhere else it would be on the container's own filesystem,
// which a restart empties, and no init container could create it.
func (p *Plan) checkPersistentDirs(l mysql.Layout, data dataVolume) error {
	root := v1alpha1.DiskFallbackMountPath
	if p.DiskVolume == nil {
		root = data.Mount.MountPath
	}
	for _, d := range l.PersistentDirs() {
		if !paths.Within(d, root) {
			return problemf(v1alpha1.ReasonInvalidLayout,
				"%s is not on the volume mounted at %s, so it would not survive a restart: choose a directory under %s (spec.mysql.replicaLoadDir)",
				d, root, root)
		}
	}
	return nil
}

// planDiskFallback puts every must-survive directory on a disk-backed emptyDir of our own. emptyDir
// directories are world-writable and exist before the container starts, so no init container is
// needed; the files' names never collide (SQL_LOAD-*, #sql*, SST staging).
func (p *Plan) planDiskFallback(sv *v1alpha1.ScratchVolume, c *corev1.Container, l *mysql.Layout, profile mysql.Profile) error {
	v := &corev1.Volume{Name: sv.DiskVolumeName(), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	m := &corev1.VolumeMount{Name: v.Name, MountPath: v1alpha1.DiskFallbackMountPath}
	if m.MountPath == p.Mount.MountPath {
		return problemf(v1alpha1.ReasonMountPathInUse, "spec.mountPath %s is where the disk-backed directories go when the data directory is on no volume: choose another", m.MountPath)
	}
	for _, um := range c.VolumeMounts {
		if path.Clean(um.MountPath) == m.MountPath {
			return problemf(v1alpha1.ReasonMountPathInUse, "container %s already mounts volume %q at %s: mount the data directory on a volumeClaimTemplate", c.Name, um.Name, m.MountPath)
		}
	}
	p.DiskVolume, p.DiskMount = v, m
	if sv.Spec.MySQL == nil || sv.Spec.MySQL.ReplicaLoadDir == "" {
		l.ReplicaLoadDir = m.MountPath
	}
	if profile.InnoDBTmpdir && l.InnoDBTmpDir != l.TmpDir {
		l.InnoDBTmpDir = m.MountPath
	}
	if profile.GaleraSST {
		l.SSTTmpDir = m.MountPath
	}
	l.HiddenDirs = nil
	return nil
}

// planDelivery renders the settings as a drop-in file (ConfigFile), flags (Args) or words of the
// image's extra-flags variable (ExtraFlags).
func (p *Plan) planDelivery(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, c *corev1.Container, profile mysql.Profile, l mysql.Layout) error {
	p.Injection = injectionMode(sv, profile)
	switch p.Injection {
	case v1alpha1.InjectionArgs:
		return p.planArgs(c, profile, l)
	case v1alpha1.InjectionExtraFlags:
		return p.planExtraFlags(c, profile, l)
	}
	return p.planConfigFile(sv, sts, c, profile, l)
}

// injectionMode is spec.mysql.injection, else ExtraFlags for images whose start script takes
// extra flags from the environment (they read no include directory and ignore container args),
// else ConfigFile.
func injectionMode(sv *v1alpha1.ScratchVolume, profile mysql.Profile) v1alpha1.InjectionMode {
	switch {
	case sv.Spec.MySQL != nil && sv.Spec.MySQL.Injection != "":
		return sv.Spec.MySQL.Injection
	case profile.ExtraFlagsEnv != "":
		return v1alpha1.InjectionExtraFlags
	}
	return v1alpha1.InjectionConfigFile
}

// checkFlagsOnly refuses, or notes, a Galera-capable server whose settings go as flags, which cannot
// reach the [sst] and [xtrabackup] groups.
func (p *Plan) checkFlagsOnly(c *corev1.Container, profile mysql.Profile, how string) error {
	if profile.ArgsSufficient() {
		return nil
	}
	if profile.Flavor == v1alpha1.FlavorPerconaXtraDBCluster {
		return problemf(v1alpha1.ReasonArgsIgnored,
			"container %s runs Percona XtraDB Cluster, whose state transfers read their temporary directory from the [sst] and [xtrabackup] sections that %s cannot set; with %s they would stage a full copy of the data in RAM: use spec.mysql.injection: ConfigFile",
			c.Name, how, p.Injection)
	}
	p.Notes = append(p.Notes, Note{Reason: v1alpha1.ReasonGaleraSST, Message: fmt.Sprintf(
		"%s cannot set the [sst] temporary directory of container %s: if the server joins a Galera cluster, use spec.mysql.injection: ConfigFile",
		how, c.Name)})
	return nil
}

// checkFlagConflicts refuses flags the user already passes: theirs or ours would silently lose.
// where says how the user passes them ("the args", "MARIADB_EXTRA_FLAGS").
func checkFlagConflicts(c *corev1.Container, existing, flags []string, where string) error {
	for _, flag := range flags {
		name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
		if _, found := mysql.FindOption(existing, name); found {
			return problemf(v1alpha1.ReasonOverriddenByArgs,
				"container %s already passes --%s: remove it from %s, the ScratchVolume sets it", c.Name, name, where)
		}
	}
	return nil
}

func (p *Plan) planArgs(c *corev1.Container, profile mysql.Profile, l mysql.Layout) error {
	if profile.Packaging == mysql.PackagingBitnami {
		return problemf(v1alpha1.ReasonArgsIgnored,
			"image %s starts the server from its own scripts and does not pass container args to it: flags cannot reach it; use spec.mysql.injection: ExtraFlags (the default for Bitnami images)",
			c.Image)
	}
	if err := p.checkFlagsOnly(c, profile, "flags"); err != nil {
		return err
	}
	flags := mysql.Args(profile, l)
	if err := checkFlagConflicts(c, append(append([]string{}, c.Command...), c.Args...), flags, "the args"); err != nil {
		return err
	}
	p.Args = flags
	return nil
}

func (p *Plan) planConfigFile(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, c *corev1.Container, profile mysql.Profile, l mysql.Layout) error {
	args := append(append([]string{}, c.Command...), c.Args...)
	if hits := mysql.DropInOverriddenBy(args, profile); len(hits) > 0 {
		return problemf(v1alpha1.ReasonOverriddenByArgs,
			"container %s passes %s on its command line, which would override the drop-in file: remove it, or set spec.mysql.injection: Args",
			c.Name, strings.Join(hits, ", "))
	}
	if script := mysql.TmpdirRemovedBy(args); script != "" {
		return problemf(v1alpha1.ReasonEntrypointRemovesTmpdir,
			"container %s starts through %s, which at every start removes the directory the option files name as tmpdir (rm -rfv under set -e): with tmpdir at the RAM volume's mount point %s that fails on the busy mount point and the container stops; set spec.mysql.injection: Args (the script reads tmpdir from option files only)",
			c.Name, script, p.Mount.MountPath)
	}
	dir := profile.ConfigDir
	if sv.Spec.MySQL != nil && sv.Spec.MySQL.ConfigDir != "" {
		dir = string(sv.Spec.MySQL.ConfigDir)
	}
	if dir == "" {
		hint := "set spec.mysql.configDir to a directory your my.cnf includes, or spec.mysql.injection: Args"
		if profile.ExtraFlagsEnv != "" {
			hint = fmt.Sprintf("its start script reads only its own my.cnf; use spec.mysql.injection: ExtraFlags (the default for this image), which adds the flags to %s, or set spec.mysql.configDir to a directory your my.cnf includes",
				profile.ExtraFlagsEnv)
		}
		return problemf(v1alpha1.ReasonConfigDirUnusable, "image %s reads no drop-in directory: %s", c.Image, hint)
	}
	if err := checkIncludeDirMount(sts, c, dir); err != nil {
		return err
	}
	p.ConfigKey = mysql.DropInFileName
	p.ConfigData = string(mysql.RenderDropIn(profile, l))
	p.ConfigVolume, p.ConfigMount = configVolume(sv, sts.Name, p.ConfigKey, dir)
	return nil
}

// configVolume mounts one key of the ScratchVolume's ConfigMap as a single file in the include
// directory, so the image's own files stay visible. The volume is optional: a missing ConfigMap must
// never keep a pod from starting.
func configVolume(sv *v1alpha1.ScratchVolume, target, key, dir string) (*corev1.Volume, *corev1.VolumeMount) {
	optional := true
	mode := int32(0o444)
	v := &corev1.Volume{
		Name: sv.ConfigVolumeName(),
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: sv.ConfigMapName(target)},
			Items:                []corev1.KeyToPath{{Key: key, Path: mysql.DropInFileName}},
			DefaultMode:          &mode,
			Optional:             &optional,
		}},
	}
	m := &corev1.VolumeMount{
		Name: v.Name, MountPath: path.Join(dir, mysql.DropInFileName), SubPath: mysql.DropInFileName, ReadOnly: true,
	}
	return v, m
}

// hash covers everything the plan injects, so that any change rolls the pods.
func (p *Plan) hash() string {
	content := struct {
		Container    string
		Volume       corev1.Volume
		Mount        corev1.VolumeMount
		ConfigVolume *corev1.Volume
		ConfigMount  *corev1.VolumeMount
		ConfigData   string
		DiskVolume   *corev1.Volume
		Args         []string
		ExtraFlags   *EnvFlags `json:",omitempty"`
		Init         *corev1.Container
		Reserve      string
	}{p.Container, p.Volume, p.Mount, p.ConfigVolume, p.ConfigMount, p.ConfigData, p.DiskVolume, p.Args, p.ExtraFlags, p.Init, ""}
	if p.Reserve != nil {
		content.Reserve = p.Reserve.String()
	}
	raw, err := json.Marshal(content)
	if err != nil {
		panic(err) // only plain data: cannot fail
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:16]
}
