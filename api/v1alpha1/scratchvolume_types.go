package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Purpose says what a scratch volume is for; it decides the default mount path and whether the
// controller also configures a database to use the volume.
//
// +kubebuilder:validation:Enum=MySQLTmpdir;Generic
type Purpose string

const (
	// PurposeMySQLTmpdir mounts the volume into a MySQL, MariaDB or Percona container and points the
	// server's `tmpdir` at it, keeping every directory that must survive a restart on disk.
	PurposeMySQLTmpdir Purpose = "MySQLTmpdir"

	// PurposeGeneric only mounts the volume; the workload decides what to write there.
	PurposeGeneric Purpose = "Generic"
)

// Default mount paths, one per purpose. The MySQL one is a sibling of the usual data directory,
// never inside it: MariaDB and MySQL 5.7 show every directory inside the datadir as a database.
const (
	DefaultMySQLTmpdirMountPath = "/var/lib/mysql-tmp"
	DefaultGenericMountPath     = "/scratch"

	// DiskFallbackMountPath is where a disk-backed emptyDir holds the replica load directory (and the
	// other must-survive directories) of a server whose data directory is on no volume.
	DiskFallbackMountPath = "/var/lib/mysql-disk-tmp"
)

// Bounds of spec.size and spec.memory.headroom. The CRD's rules spell the same values (a test
// checks that they agree); the controller checks them again for objects stored before the rules
// existed.
//
// Both must also be a whole number of bytes. The CEL quantity library's isInteger() answers for a
// quantity's internal form, not its value (false for 1.5Gi, 1610612736 bytes), so the rules
// subtract from the value, exactly, the integer nearest its approximate float, which within these
// bounds (far below 2^53) is off by much less than half a byte, and ask whether nothing is left.
const (
	// MinScratchVolumeSize holds the first on-disk internal temporary table: MySQL and MariaDB
	// move one to disk when it outgrows tmp_table_size, 16Mi by default.
	MinScratchVolumeSize = "16Mi"
	// MaxScratchVolumeSize: beyond it a local disk is the better scratch space, and a mistyped
	// unit (1Ti for 1Gi) must not reach a pod template.
	MaxScratchVolumeSize = "64Gi"
	// MaxMemoryHeadroom bounds the memory Validate keeps for the database beside the volume.
	MaxMemoryHeadroom = "1Ti"
)

// The messages of spec.mysql.version's rules. The controller gives the same ones for an object
// stored before the rules existed (a test checks that the CRD spells them).
const (
	// MaxVersionComponent is the largest number spec.mysql.version may hold in any place.
	MaxVersionComponent  = 9999
	VersionShapeMessage  = "spec.mysql.version must look like 8.0 or 8.0.36"
	VersionBoundsMessage = "spec.mysql.version must have no number above 9999, such as 8.0 or 8.0.36"
)

// MySQLFlavor names a MySQL-compatible server distribution.
//
// +kubebuilder:validation:Enum=MySQL;MariaDB;PerconaServer;PerconaXtraDBCluster
type MySQLFlavor string

const (
	// FlavorMySQL is Oracle MySQL (including images that repackage it, such as bitnami/mysql).
	FlavorMySQL MySQLFlavor = "MySQL"
	// FlavorMariaDB is MariaDB Server.
	FlavorMariaDB MySQLFlavor = "MariaDB"
	// FlavorPerconaServer is Percona Server for MySQL.
	FlavorPerconaServer MySQLFlavor = "PerconaServer"
	// FlavorPerconaXtraDBCluster is Percona XtraDB Cluster (Galera with SST through xtrabackup).
	FlavorPerconaXtraDBCluster MySQLFlavor = "PerconaXtraDBCluster"
)

// InjectionMode says how server options reach the database.
//
// +kubebuilder:validation:Enum=ConfigFile;Args;ExtraFlags
type InjectionMode string

const (
	// InjectionConfigFile mounts a my.cnf drop-in file from a ConfigMap owned by the ScratchVolume
	// into the server's include directory. Nothing in the container's args changes, so GitOps tools
	// that own the args never fight the controller.
	InjectionConfigFile InjectionMode = "ConfigFile"

	// InjectionArgs appends `--tmpdir=…` style flags to the container's args. Args are an atomic list
	// under server-side apply: the controller then owns the whole list.
	InjectionArgs InjectionMode = "Args"

	// InjectionExtraFlags adds the flags to the environment variable through which the Bitnami
	// images take extra server options (MYSQL_EXTRA_FLAGS, MARIADB_EXTRA_FLAGS; the charts' value
	// extraFlags). Their start script runs mysqld with --defaults-file and no include directory, and
	// appends the variable's words to the command line, so the flags win over the chart's my.cnf.
	// A value the user already set is kept and the flags are added after it; the variable goes back
	// to exactly the user's value (or away) on revert.
	InjectionExtraFlags InjectionMode = "ExtraFlags"
)

// TempTablespacePlacement says where MySQL's session temporary tablespaces go.
//
// +kubebuilder:validation:Enum=Memory;Disk
type TempTablespacePlacement string

const (
	// TempTablespacesMemory points innodb_temp_tablespaces_dir at the scratch volume.
	TempTablespacesMemory TempTablespacePlacement = "Memory"

	// TempTablespacesDisk leaves them in the server's default place, #innodb_temp in the data
	// directory.
	TempTablespacesDisk TempTablespacePlacement = "Disk"
)

// InnoDBTmpdirPlacement says where `innodb_tmpdir` (online ALTER TABLE sort files) goes.
//
// +kubebuilder:validation:Enum=Disk;Memory
type InnoDBTmpdirPlacement string

const (
	// InnoDBTmpdirDisk keeps online-DDL sort files on the persistent volume. Those files can be as
	// large as the table being rebuilt, so RAM is rarely the right place.
	InnoDBTmpdirDisk InnoDBTmpdirPlacement = "Disk"

	// InnoDBTmpdirMemory places online-DDL sort files on the scratch volume as well.
	InnoDBTmpdirMemory InnoDBTmpdirPlacement = "Memory"
)

// MemoryAccounting says how the scratch volume's memory is weighed against the container's.
//
// +kubebuilder:validation:Enum=Validate;Reserve;Ignore
type MemoryAccounting string

const (
	// MemoryValidate injects only when the container's memory limit covers the volume size plus the
	// database's own needs; otherwise the StatefulSet is left untouched and MemoryBudget is False.
	MemoryValidate MemoryAccounting = "Validate"

	// MemoryReserve adds the volume size to the container's memory request and limit.
	MemoryReserve MemoryAccounting = "Reserve"

	// MemoryIgnore injects without looking at memory. tmpfs pages are charged to the container's
	// memory cgroup: the user takes the risk of an OOM kill.
	MemoryIgnore MemoryAccounting = "Ignore"
)

// LargePagesPolicy says which pages the tmpfs of a RAM scratch volume keeps its files in.
//
// +kubebuilder:validation:Enum=WithinSize;Never
type LargePagesPolicy string

const (
	// LargePagesWithinSize has the node agent set the volume's tmpfs to huge=within_size as soon
	// as the pod runs: large folios for the part of each file its size covers, so a file holds no
	// more memory than with small pages and moves through far fewer page allocations.
	LargePagesWithinSize LargePagesPolicy = "WithinSize"

	// LargePagesNever leaves the tmpfs as the kubelet mounts it (4 KiB pages, unless the node's
	// kernel command line sets another tmpfs default), and puts back huge=never where the agent
	// had set large pages.
	LargePagesNever LargePagesPolicy = "Never"
)

// LargePagesState is what a pod's RAM volume runs with, as the node agent reports it.
//
// +kubebuilder:validation:Enum=Applied;Default;Unsupported;Overridden;Disabled;Failed
type LargePagesState string

const (
	// LargePagesApplied: the tmpfs runs with the option spec.largePages asks for (the mount
	// table shows it).
	LargePagesApplied LargePagesState = "Applied"
	// LargePagesDefault: spec.largePages is Never and the tmpfs runs as the kubelet mounted it.
	LargePagesDefault LargePagesState = "Default"
	// LargePagesUnsupported: the node's kernel cannot give a tmpfs large pages (no transparent
	// huge pages) or refused the option; the agent does not try again for this pod.
	LargePagesUnsupported LargePagesState = "Unsupported"
	// LargePagesOverridden: the option is set, but the node's shmem_enabled (deny or force)
	// decides for every tmpfs.
	LargePagesOverridden LargePagesState = "Overridden"
	// LargePagesDisabled: the node agent runs with --large-pages=false (the cluster does not let
	// it remount), so the tmpfs runs as the kubelet mounted it.
	LargePagesDisabled LargePagesState = "Disabled"
	// LargePagesFailed: the agent could not change the tmpfs; the message has the error. It tries
	// again when spec.largePages changes or the agent restarts.
	LargePagesFailed LargePagesState = "Failed"
)

// DefaultMemoryHeadroom is what Validate assumes the database needs beyond the scratch volume when
// neither spec.memory.headroom nor an innodb_buffer_pool_size in the container says more.
const DefaultMemoryHeadroom = "256Mi"

// ScratchTarget selects StatefulSets in the ScratchVolume's namespace: one by name, or all that match
// a label selector (including those created later).
//
// +kubebuilder:validation:XValidation:rule="has(self.name) || has(self.selector)",message="spec.target needs either name (one StatefulSet) or selector (StatefulSets by label)"
// +kubebuilder:validation:XValidation:rule="!(has(self.name) && has(self.selector))",message="spec.target.name and spec.target.selector are mutually exclusive: set only one of them"
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || (has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="spec.target.selector must have at least one matchLabels entry or matchExpressions term: an empty selector would select every StatefulSet in the namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || !has(self.selector.matchExpressions) || self.selector.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="spec.target.selector.matchExpressions[].operator must be one of In, NotIn, Exists, DoesNotExist"
// +kubebuilder:validation:XValidation:rule="!has(self.selector) || !has(self.selector.matchExpressions) || self.selector.matchExpressions.all(e, e.operator in ['In', 'NotIn'] ? (has(e.values) && size(e.values) > 0) : (!has(e.values) || size(e.values) == 0))",message="spec.target.selector.matchExpressions[]: In and NotIn need at least one value, Exists and DoesNotExist take none"
type ScratchTarget struct {
	// Name of one StatefulSet in the ScratchVolume's namespace. The StatefulSet may be created
	// after the ScratchVolume: it is injected as soon as it appears.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.target.name must be a StatefulSet name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	Name string `json:"name,omitempty"`

	// Selector picks every StatefulSet in the namespace whose labels match, now and later. It must
	// not be empty.
	//
	// +optional
	Selector *LabelSelector `json:"selector,omitempty"`

	// AllowedControllers lists the kinds of controller that may own a StatefulSet this
	// ScratchVolume injects. A StatefulSet whose controller owner reference (controller: true)
	// points at any other kind is left untouched, with the condition reason ControlledByOperator:
	// an operator that writes its whole pod template on every reconcile removes the entries, and
	// every restore rolls the database pods. List a kind only when its operator keeps fields other
	// field managers own (operators that write with server-side apply do). StatefulSets without a
	// controller owner reference (created by a person, Helm, Argo CD or Flux) need no entry.
	//
	// +optional
	// +listType=map
	// +listMapKey=apiGroup
	// +listMapKey=kind
	// +kubebuilder:validation:MaxItems=16
	AllowedControllers []ControllerKind `json:"allowedControllers,omitempty"`
}

// ControllerKind names a kind of object that may control (own, with controller: true) a
// StatefulSet.
type ControllerKind struct {
	// APIGroup is the kind's API group, without its version: k8s.mariadb.com, not
	// k8s.mariadb.com/v1alpha1.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.target.allowedControllers[].apiGroup must be an API group such as k8s.mariadb.com, without a version"
	APIGroup string `json:"apiGroup"`

	// Kind is the kind, as its owner references spell it: MariaDB, MySQLCluster, InnoDBCluster.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][A-Za-z0-9]*$')",message="spec.target.allowedControllers[].kind must be a kind such as MariaDB: letters and digits, starting with a letter"
	Kind string `json:"kind"`
}

// MySQLSpec tunes how a MySQLTmpdir volume is wired into the database. Every field is optional:
// the controller detects the flavor and version from the container image.
//
// +kubebuilder:validation:XValidation:rule="!has(self.version) || has(self.flavor)",message="spec.mysql.version needs spec.mysql.flavor: say which server the version belongs to"
// +kubebuilder:validation:XValidation:rule="!has(self.sessionTempTablespaces) || !has(self.flavor) || self.flavor != 'MariaDB'",message="spec.mysql.sessionTempTablespaces is for MySQL and Percona Server: MariaDB has no session temporary tablespaces and keeps its internal temporary tables in tmpdir, which the scratch volume already holds"
// +kubebuilder:validation:XValidation:rule="!has(self.sessionTempSpacePercent) || !has(self.tempSpaceLimit) || self.tempSpaceLimit != 'None'",message="spec.mysql.sessionTempSpacePercent is a share of the server's limit on temporary space, which spec.mysql.tempSpaceLimit: None turns off: remove one of them"
// +kubebuilder:validation:XValidation:rule="!has(self.sessionTempSpacePercent) || !has(self.flavor) || self.flavor == 'MariaDB'",message="spec.mysql.sessionTempSpacePercent is for MariaDB 11.5.1 and later (max_tmp_session_space_usage): MySQL and Percona Server have no limit on a session's temporary space"
type MySQLSpec struct {
	// Flavor overrides the server flavor detected from the image. Set it (with version) for images
	// the controller cannot classify, such as a private build named after your company.
	//
	// +optional
	Flavor MySQLFlavor `json:"flavor,omitempty"`

	// Version overrides the server version detected from the image, as MAJOR.MINOR or
	// MAJOR.MINOR.PATCH. It decides option names: MySQL 8.0.26 and later read replica_load_tmpdir,
	// older MySQL and every MariaDB read slave_load_tmpdir.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+[.][0-9]+([.][0-9]+)?$')",message="spec.mysql.version must look like 8.0 or 8.0.36"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+[.][0-9]+([.][0-9]+)?$') || self.matches('^0*[0-9]{1,4}[.]0*[0-9]{1,4}([.]0*[0-9]{1,4})?$')",message="spec.mysql.version must have no number above 9999, such as 8.0 or 8.0.36"
	Version string `json:"version,omitempty"`

	// Injection says how options reach the server: ConfigFile mounts a my.cnf drop-in file into
	// the server's include directory; Args appends command-line flags; ExtraFlags adds them to the
	// MYSQL_EXTRA_FLAGS or MARIADB_EXTRA_FLAGS environment variable of the Bitnami images. Default:
	// ExtraFlags for bitnami/mysql, bitnami/mariadb and bitnami/mariadb-galera images (under any
	// registry, also bitnamilegacy/), which read neither an include directory nor container args;
	// ConfigFile for every other image. status.targets[].injection shows the mode used.
	//
	// +optional
	Injection InjectionMode `json:"injection,omitempty"`

	// ConfigDir overrides the include directory the server reads drop-in files from (for example
	// /etc/mysql/conf.d). Default: the directory the detected image's my.cnf includes.
	//
	// +optional
	ConfigDir ConfigPath `json:"configDir,omitempty"`

	// DataDir overrides the server's data directory. Default: the detected image's data directory,
	// /var/lib/mysql for the official images.
	//
	// +optional
	DataDir AbsolutePath `json:"dataDir,omitempty"`

	// ReplicaLoadDir overrides where a replica keeps the SQL_LOAD-* files of a replicated LOAD DATA
	// (slave_load_tmpdir / replica_load_tmpdir). It must be on the persistent volume: a replica that
	// restarts between the events of one LOAD DATA needs those files. Default: a directory beside
	// the data directory on the same persistent volume.
	//
	// +optional
	ReplicaLoadDir AbsolutePath `json:"replicaLoadDir,omitempty"`

	// InnoDBTmpdir says where innodb_tmpdir (online ALTER TABLE sort files) goes: Disk (default)
	// keeps it on the persistent volume, Memory puts it on the scratch volume.
	//
	// +optional
	// +kubebuilder:default=Disk
	InnoDBTmpdir InnoDBTmpdirPlacement `json:"innodbTmpdir,omitempty"`

	// SessionTempTablespaces says where MySQL and Percona Server keep their session temporary
	// tablespaces (innodb_temp_tablespaces_dir, from 8.0.13): Memory puts them on the scratch
	// volume, Disk leaves them in #innodb_temp in the data directory. Since 8.0.16 they hold every
	// on-disk internal temporary table (GROUP BY, DISTINCT, UNION, derived tables that outgrow
	// memory) and the user-created temporary tables, which tmpdir does not cover. The server
	// recreates them at every start and removes them at shutdown, so RAM loses nothing. Default:
	// Memory on servers that have them; MariaDB and MySQL before 8.0.13 have none (MariaDB keeps
	// its internal temporary tables in tmpdir), and the field is ignored there.
	//
	// +optional
	SessionTempTablespaces TempTablespacePlacement `json:"sessionTempTablespaces,omitempty"`

	// TempSpaceLimit says whether the server's own limit on temporary space follows the volume,
	// on servers that have one (MariaDB 11.5.1 and later: max_tmp_total_space_usage, which counts
	// sort files, on-disk internal temporary tables and binary log caches). Auto (the default)
	// sets it to the volume's size less a margin of a sixteenth (at least 2Mi), rounded down to
	// 64Ki: a query that needs more then fails with the server's own error while the server and
	// the other sessions go on, instead of the volume filling up. None leaves the server's
	// default (1Ti, no limit in practice). Servers without such a limit ignore the field; the
	// status says, for each target, what happens there when the volume fills.
	//
	// +optional
	TempSpaceLimit TempSpaceLimitMode `json:"tempSpaceLimit,omitempty"`

	// SessionTempSpacePercent limits one session to this share of the server's limit
	// (max_tmp_session_space_usage), so that one query cannot take the whole volume from the
	// others. Unset: a session may use all of it. Needs a server limit (tempSpaceLimit not None).
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	SessionTempSpacePercent *int32 `json:"sessionTempSpacePercent,omitempty"`
}

// TempSpaceLimitMode says whether the server's own limit on temporary space follows the volume.
//
// +kubebuilder:validation:Enum=Auto;None
type TempSpaceLimitMode string

const (
	// TempSpaceLimitAuto sets the server's limit a margin below the volume's size.
	TempSpaceLimitAuto TempSpaceLimitMode = "Auto"
	// TempSpaceLimitNone leaves the server's default.
	TempSpaceLimitNone TempSpaceLimitMode = "None"
)

// MemorySpec says how the scratch volume's memory is accounted for.
type MemorySpec struct {
	// Accounting is Validate (default: inject only when the container's memory limit covers size
	// plus headroom), Reserve (add size to the container's memory request and limit) or Ignore.
	//
	// +optional
	// +kubebuilder:default=Validate
	Accounting MemoryAccounting `json:"accounting,omitempty"`

	// Headroom is the memory, in bytes, that Validate reserves for the database beyond the scratch
	// volume when the container does not set innodb_buffer_pool_size. Default: 256Mi. At most 1Ti,
	// a whole number of bytes (1.5Gi is one: 1610612736 bytes).
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && !quantity(string(self)).isLessThan(quantity('0'))",message="spec.memory.headroom must be a non-negative quantity of bytes such as 256Mi or 1Gi"
	// +kubebuilder:validation:XValidation:rule="!string(self).endsWith('m')",message="spec.memory.headroom ends in 'm', which means thousandths of a byte: write Mi for mebibytes (256Mi) or M for megabytes (256M)"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || quantity(string(self)).isLessThan(quantity('0')) || quantity(string(self)).isGreaterThan(quantity('1Ti')) || quantity(string(self)).sub(int(quantity(string(self)).asApproximateFloat() + 0.5)).compareTo(quantity('0')) == 0",message="spec.memory.headroom must be a whole number of bytes, such as 256Mi or 1Gi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || !quantity(string(self)).isGreaterThan(quantity('1Ti'))",message="spec.memory.headroom must be at most 1Ti"
	Headroom *resource.Quantity `json:"headroom,omitempty"`
}

// AbsolutePath is a clean absolute path inside a container.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=512
// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="must be an absolute path starting with '/'"
// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.]?(/|$)') && !self.contains('//') && (self == '/' || !self.endsWith('/'))",message="must be a clean path: no '.' or '..' segments, no '//', no trailing '/'"
// +kubebuilder:validation:XValidation:rule="self != '/'",message="must not be the root directory '/'"
// +kubebuilder:validation:XValidation:rule="!self.matches('^/(proc|sys|dev|etc)(/|$)')",message="must not be /proc, /sys, /dev or /etc or lie under them: those belong to the container runtime"
// +kubebuilder:validation:XValidation:rule=`!self.matches('[\\x00-\\x20\\x7f-\\x{10ffff}"#;:\\x27\\x5c\\x60]')`,message="must be printable ASCII without whitespace, control characters or any of \" ' ` # ; : \\ : option files and mount tables read them specially"
type AbsolutePath string

// ConfigPath is a clean absolute path to a configuration directory inside a container; unlike
// AbsolutePath it may lie under /etc, where option files live.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=512
// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="must be an absolute path starting with '/'"
// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.]?(/|$)') && !self.contains('//') && (self == '/' || !self.endsWith('/'))",message="must be a clean path: no '.' or '..' segments, no '//', no trailing '/'"
// +kubebuilder:validation:XValidation:rule="self != '/' && self != '/etc'",message="must be a directory of option files such as /etc/mysql/conf.d, not / or /etc"
// +kubebuilder:validation:XValidation:rule="!self.matches('^/(proc|sys|dev)(/|$)')",message="must not be /proc, /sys or /dev or lie under them"
// +kubebuilder:validation:XValidation:rule=`!self.matches('[\\x00-\\x20\\x7f-\\x{10ffff}"#;:\\x27\\x5c\\x60]')`,message="must be printable ASCII without whitespace, control characters or any of \" ' ` # ; : \\ : option files and mount tables read them specially"
type ConfigPath string

// ScratchVolumeSpec is what a user asks for: a RAM volume of a size, for a purpose, in some
// StatefulSets.
//
// +kubebuilder:validation:XValidation:rule="!has(self.mysql) || self.purpose == 'MySQLTmpdir'",message="spec.mysql is only allowed when spec.purpose is MySQLTmpdir"
// +kubebuilder:validation:XValidation:rule="self.purpose != 'MySQLTmpdir' || !has(self.mountPath) || !self.mountPath.matches('^(/var/lib/mysql|/var/lib/mariadb|/bitnami/mysql/data|/bitnami/mariadb/data)(/|$)')",message="spec.mountPath must not be a database data directory or lie inside one (/var/lib/mysql, /var/lib/mariadb, /bitnami/mysql/data, /bitnami/mariadb/data): choose a sibling such as /var/lib/mysql-tmp",fieldPath=".mountPath"
// +kubebuilder:validation:XValidation:rule="!has(self.mysql) || !has(self.mysql.dataDir) || !((has(self.mountPath) ? self.mountPath : '/var/lib/mysql-tmp') == self.mysql.dataDir || (has(self.mountPath) ? self.mountPath : '/var/lib/mysql-tmp').startsWith(self.mysql.dataDir + '/') || self.mysql.dataDir.startsWith((has(self.mountPath) ? self.mountPath : '/var/lib/mysql-tmp') + '/'))",message="the scratch volume's mount path (spec.mountPath, default /var/lib/mysql-tmp) must not be spec.mysql.dataDir, lie inside it or above it: the scratch volume would hide the data",fieldPath=".mountPath"
// +kubebuilder:validation:XValidation:rule="!has(self.mysql) || !has(self.mysql.configDir) || !((has(self.mountPath) ? self.mountPath : '/var/lib/mysql-tmp') == self.mysql.configDir || (has(self.mountPath) ? self.mountPath : '/var/lib/mysql-tmp').startsWith(self.mysql.configDir + '/') || self.mysql.configDir.startsWith((has(self.mountPath) ? self.mountPath : '/var/lib/mysql-tmp') + '/'))",message="the scratch volume's mount path (spec.mountPath, default /var/lib/mysql-tmp) must not be spec.mysql.configDir, lie inside it or above it: the server reads its option files there",fieldPath=".mountPath"
// +kubebuilder:validation:XValidation:rule="!has(self.mysql) || !has(self.mysql.replicaLoadDir) || !(self.mysql.replicaLoadDir == (has(self.mountPath) ? self.mountPath : '/var/lib/mysql-tmp') || self.mysql.replicaLoadDir.startsWith((has(self.mountPath) ? self.mountPath : '/var/lib/mysql-tmp') + '/'))",message="spec.mysql.replicaLoadDir must not be on the scratch volume: a replica needs its SQL_LOAD files after a restart; choose a directory on the persistent volume",fieldPath=".mysql.replicaLoadDir"
type ScratchVolumeSpec struct {
	// Target selects the StatefulSets, in this namespace, that get the scratch volume.
	//
	// +required
	Target ScratchTarget `json:"target"`

	// Size is the capacity of the RAM volume in bytes (512Mi, 2Gi, …): the emptyDir's sizeLimit and,
	// because tmpfs pages are charged to the container's memory cgroup, memory the container must
	// have. At least 16Mi: MySQL and MariaDB move an internal temporary table to disk when it
	// outgrows tmp_table_size (16Mi by default), so a smaller volume cannot hold the first one. At
	// most 64Gi: beyond it a local disk is the better scratch space, and a mistyped unit (1Ti for
	// 1Gi) must not reach a pod template. A whole number of bytes: 1.5Gi is one (1610612736 bytes),
	// 512m is 0.512 bytes and 0.1Ki 102.4 bytes.
	//
	// +required
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))",message="spec.size must be a positive quantity of bytes such as 512Mi or 4Gi"
	// +kubebuilder:validation:XValidation:rule="!string(self).endsWith('m')",message="spec.size ends in 'm', which means thousandths of a byte (512m is 0.512 bytes): write Mi for mebibytes (512Mi) or M for megabytes (512M)"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || quantity(string(self)).isLessThan(quantity('0')) || quantity(string(self)).isGreaterThan(quantity('64Gi')) || quantity(string(self)).sub(int(quantity(string(self)).asApproximateFloat() + 0.5)).compareTo(quantity('0')) == 0",message="spec.size must be a whole number of bytes, such as 512Mi or 4Gi"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || !quantity(string(self)).isLessThan(quantity('16Mi'))",message="spec.size must be at least 16Mi: the server moves an internal temporary table to disk when it outgrows tmp_table_size (16Mi by default), so a smaller volume fails the first such query with 'No space left on device'"
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || !quantity(string(self)).isGreaterThan(quantity('64Gi'))",message="spec.size must be at most 64Gi"
	Size resource.Quantity `json:"size"`

	// Purpose is MySQLTmpdir (default: mount the volume and point the database's tmpdir at it) or
	// Generic (only mount it). It cannot change after creation.
	//
	// +optional
	// +kubebuilder:default=MySQLTmpdir
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.purpose is immutable: create a new ScratchVolume for another purpose"
	Purpose Purpose `json:"purpose,omitempty"`

	// Container is the name of the container that gets the volume. Default: the database container
	// (for MySQLTmpdir, the one running a MySQL-compatible image; for Generic, the only container).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.container must be a container name: lower-case letters, digits and '-', at most 63 characters"
	Container string `json:"container,omitempty"`

	// MountPath is where the volume appears in the container. Default: /var/lib/mysql-tmp for
	// MySQLTmpdir, /scratch for Generic. For MySQLTmpdir it must not be the data directory or lie
	// inside it.
	//
	// +optional
	MountPath AbsolutePath `json:"mountPath,omitempty"`

	// MySQL tunes how the volume is wired into a MySQL-compatible server. Only for MySQLTmpdir.
	//
	// +optional
	MySQL *MySQLSpec `json:"mysql,omitempty"`

	// Memory says how the volume's memory is accounted for against the container's.
	//
	// +optional
	// +kubebuilder:default={}
	Memory MemorySpec `json:"memory,omitempty"`

	// LargePages says whether the node agent gives the volume's tmpfs large pages.
	// WithinSize (the default) sets huge=within_size on each pod's tmpfs as soon as the agent
	// sees the pod, without a restart: the kubelet mounts a memory emptyDir in 4 KiB pages, which
	// made temporary files slower in RAM than on a disk's page cache (docs/tuning.md has the
	// figures). Never leaves the kubelet's mount as it is. A change applies to running pods at
	// once, for the pages written from then on; it changes no pod template and restarts nothing.
	// status.targets[].largePages says what each pod's volume runs with.
	//
	// +optional
	// +kubebuilder:default=WithinSize
	LargePages LargePagesPolicy `json:"largePages,omitempty"`

	// Changes says when a change the user did not write in this ScratchVolume reaches its
	// StatefulSets. Every change to a pod template restarts the database pods, so a change of what
	// the controller renders for a running target that comes from anything but an edit of this
	// ScratchVolume or of the StatefulSet (a new release of the operator renders it differently, a
	// default changed) waits: it is reported in status.targets[].pendingChange until it is approved
	// with the annotation dbtune.io/approve-change or a maintenance window opens. An edit of the
	// spec applies at once.
	//
	// +optional
	Changes *ChangePolicy `json:"changes,omitempty"`

	// Rollout says how fast a change reaches the StatefulSets: a few at a time, the next ones once
	// those are rolled out and ready, so that a selector over a fleet never restarts every
	// database in the same minutes. Reverting (deleting the ScratchVolume) is paced alike.
	//
	// +optional
	Rollout *RolloutPolicy `json:"rollout,omitempty"`

	// Sizing says who sets spec.size. Manual (the default): you do; status.recommendedSize only
	// advises. Recommend: you do, and status.sizing also says what Automatic would do and when.
	// Automatic: the controller sets spec.size itself, within min and max, to what the volumes'
	// recent peaks call for once they have called for it long enough (sustainFor), at most once
	// per interval, and only with approval or in a maintenance window (spec.changes), like every
	// change you did not write; status.sizing keeps the last resizes and the figures behind them.
	//
	// +optional
	Sizing *SizingPolicy `json:"sizing,omitempty"`
}

// RolloutPolicy paces the writes of a ScratchVolume's changes across its target StatefulSets.
type RolloutPolicy struct {
	// MaxInFlight is how many target StatefulSets may be rolling out at once: a count (3) or a
	// share of the targets (25%, rounded up). A StatefulSet is in flight while it is not rolled
	// out or not all its pods are ready, whatever started its rollout; the controller changes
	// another one only when fewer are. Default: the manager's --max-in-flight (25%).
	//
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="spec.rollout.maxInFlight must be a count of at least 1 or a share from 1% to 100%, such as 25%"
	MaxInFlight *intstr.IntOrString `json:"maxInFlight,omitempty"`

	// ProgressDeadline is how long a target may stay in flight. One that takes longer stops the
	// rollout: no further StatefulSet is changed until it is rolled out and ready, and RolledOut
	// names it. From 1m to 24h, such as 10m. Default: the manager's --progress-deadline (10m).
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=12
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+h)?([0-9]+m)?(0+s)?$') && self.matches('[0-9]+[hm]') && duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="spec.rollout.progressDeadline must be whole hours and minutes from 1m to 24h, such as 10m"
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`
}

// SizingMode says who sets spec.size.
//
// +kubebuilder:validation:Enum=Manual;Recommend;Automatic
type SizingMode string

const (
	// SizingManual leaves spec.size to the user; status.recommendedSize advises.
	SizingManual SizingMode = "Manual"
	// SizingRecommend leaves spec.size to the user, and reports what Automatic would do.
	SizingRecommend SizingMode = "Recommend"
	// SizingAutomatic lets the controller set spec.size within bounds.
	SizingAutomatic SizingMode = "Automatic"
)

// SizingPolicy says who sets spec.size, and within which bounds and how often the controller does.
//
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode == 'Manual' || (has(self.min) && has(self.max))",message="spec.sizing.min and spec.sizing.max are required with mode Recommend or Automatic: they bound the sizes the controller may choose"
// +kubebuilder:validation:XValidation:rule="!has(self.min) || !has(self.max) || !isQuantity(string(self.min)) || !isQuantity(string(self.max)) || !quantity(string(self.min)).isGreaterThan(quantity(string(self.max)))",message="spec.sizing.min must not be larger than spec.sizing.max"
type SizingPolicy struct {
	// Mode is Manual (the default), Recommend or Automatic.
	//
	// +optional
	Mode SizingMode `json:"mode,omitempty"`

	// Min and Max bound the sizes the controller chooses, from 16Mi to 64Gi; required with
	// Recommend and Automatic. The controller never sets a size below the highest use a pod's
	// volume has had, even when min allows it.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && !quantity(string(self)).isLessThan(quantity('16Mi')) && !quantity(string(self)).isGreaterThan(quantity('64Gi')) && quantity(string(self)).sub(int(quantity(string(self)).asApproximateFloat() + 0.5)).compareTo(quantity('0')) == 0",message="spec.sizing.min must be a whole number of bytes from 16Mi to 64Gi, such as 256Mi"
	Min *resource.Quantity `json:"min,omitempty"`

	// Max is the largest size the controller chooses (see Min).
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && !quantity(string(self)).isLessThan(quantity('16Mi')) && !quantity(string(self)).isGreaterThan(quantity('64Gi')) && quantity(string(self)).sub(int(quantity(string(self)).asApproximateFloat() + 0.5)).compareTo(quantity('0')) == 0",message="spec.sizing.max must be a whole number of bytes from 16Mi to 64Gi, such as 4Gi"
	Max *resource.Quantity `json:"max,omitempty"`

	// SustainFor is how long the volumes' recent peaks must call for a size at least one step
	// away from spec.size, without a break, before the controller proposes it: one spike, which
	// leaves the agents' one-hour window after an hour, does not. From 1m to 30 days (720h).
	// Default 6h.
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=12
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+h)?([0-9]+m)?(0+s)?$') && self.matches('[0-9]+[hm]') && duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="spec.sizing.sustainFor must be whole hours and minutes from 1m to 720h, such as 6h"
	SustainFor *metav1.Duration `json:"sustainFor,omitempty"`

	// Interval is the least time between two automatic resizes. From 1m to 30 days (720h).
	// Default 24h.
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=12
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+h)?([0-9]+m)?(0+s)?$') && self.matches('[0-9]+[hm]') && duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="spec.sizing.interval must be whole hours and minutes from 1m to 720h, such as 24h"
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// ChangePolicy says when changes the user did not write may be applied without approval.
type ChangePolicy struct {
	// MaintenanceWindows are the times such a change is applied without approval. Empty: the
	// manager's default windows (its --maintenance-window flag), if it has any.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	MaintenanceWindows []MaintenanceWindow `json:"maintenanceWindows,omitempty"`
}

// MaintenanceWindow is a time, recurring every week, when pods may be restarted: it opens at Start
// on each of Days, in TimeZone, and lasts Duration.
type MaintenanceWindow struct {
	// Days are the days the window opens on. Empty: every day.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	Days []Weekday `json:"days,omitempty"`

	// Start is the time of day the window opens, HH:MM on a 24-hour clock.
	//
	// +required
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	Start string `json:"start"`

	// Duration is how long the window stays open: from 1m to 24h, such as 90m or 2h.
	//
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=12
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+h)?([0-9]+m)?(0+s)?$') && self.matches('[0-9]+[hm]') && duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="duration must be whole hours and minutes from 1m to 24h, such as 90m or 2h"
	Duration metav1.Duration `json:"duration"`

	// TimeZone is the IANA time zone Start and Days are in, such as Europe/Berlin. Default: UTC.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`
	TimeZone string `json:"timeZone,omitempty"`
}

// Weekday is a day of the week.
//
// +kubebuilder:validation:Enum=Mon;Tue;Wed;Thu;Fri;Sat;Sun
type Weekday string

// ScratchTargetStatus reports one selected StatefulSet.
type ScratchTargetStatus struct {
	// Name of the StatefulSet.
	//
	// +required
	Name string `json:"name"`

	// Container is the container the volume is mounted in.
	//
	// +optional
	Container string `json:"container,omitempty"`

	// Flavor and Version are the database the controller detected (or was told) for this target.
	//
	// +optional
	Flavor MySQLFlavor `json:"flavor,omitempty"`

	// Version is the detected or overridden server version.
	//
	// +optional
	Version string `json:"version,omitempty"`

	// Injected is true when the StatefulSet's pod template carries the scratch volume.
	//
	// +optional
	Injected bool `json:"injected,omitempty"`

	// Replicas is the StatefulSet's desired replica count.
	//
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// UpdatedReplicas is how many pods run the injected template revision.
	//
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// ReadyReplicas is how many pods are ready.
	//
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// ConfigHash is the hash of what was injected, also found in the pod template annotation
	// scratch.dbtune.io/<ScratchVolume name>.
	//
	// +optional
	ConfigHash string `json:"configHash,omitempty"`

	// Injection is how the settings reach the server (spec.mysql.injection, or the mode chosen
	// for the image).
	//
	// +optional
	Injection InjectionMode `json:"injection,omitempty"`

	// TempLocations says, for each kind of temporary data the server writes, where the injection
	// puts it: on the scratch volume (Memory) or on disk, with the server option and path.
	//
	// +optional
	// +listType=map
	// +listMapKey=data
	TempLocations []TempLocation `json:"tempLocations,omitempty"`

	// TempSpace is the server's own limit on temporary space as the injection sets it, and what
	// happens when temporary data reaches it or fills the volume.
	//
	// +optional
	TempSpace *TempSpaceStatus `json:"tempSpace,omitempty"`

	// Message explains a target that is not injected.
	//
	// +optional
	Message string `json:"message,omitempty"`

	// Restores are the times, oldest first, the controller put back entries that another writer
	// had removed from this StatefulSet, within the last write-war window (10 minutes). The
	// controller keeps them here so that a restarted manager still counts them.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Restores []metav1.Time `json:"restores,omitempty"`

	// WriteWar is set while another writer keeps removing the controller's entries from this
	// StatefulSet and the controller, instead of restoring them again, holds off.
	//
	// +optional
	WriteWar *WriteWar `json:"writeWar,omitempty"`

	// Usage sums up how full the RAM volumes of this StatefulSet's pods have been, as the node
	// agents observed them.
	//
	// +optional
	Usage *ScratchUsage `json:"usage,omitempty"`

	// Applied records what the configuration on the StatefulSet was rendered from, so that a later
	// difference can be told apart: an edit of the ScratchVolume or of the StatefulSet applies at
	// once, any other waits in PendingChange.
	//
	// +optional
	Applied *AppliedConfig `json:"applied,omitempty"`

	// InFlightSince is when the controller first found this StatefulSet in flight (not rolled out,
	// or not all its pods ready); absent when it is not.
	//
	// +optional
	InFlightSince *metav1.Time `json:"inFlightSince,omitempty"`

	// PendingChange is a change of this StatefulSet's configuration that nobody wrote in the
	// ScratchVolume or the StatefulSet, waiting for approval or a maintenance window. The
	// StatefulSet keeps its current configuration meanwhile.
	//
	// +optional
	PendingChange *PendingChange `json:"pendingChange,omitempty"`

	// LargePages says, per pod the node agents report on, which pages its RAM volume runs with.
	//
	// +optional
	// +listType=map
	// +listMapKey=pod
	LargePages []PodLargePages `json:"largePages,omitempty"`

	// RestartsAtOnce is how many of the StatefulSet's pods a change of its pod template restarts
	// at once: its rollingUpdate.maxUnavailable (a share of the replicas rounded down, at least 1;
	// 1 when unset), at most the pods at or above the partition. Absent under OnDelete, where no
	// pod restarts until it is deleted.
	//
	// +optional
	RestartsAtOnce int32 `json:"restartsAtOnce,omitempty"`

	// Refused is set when the API server refused to create the pods of the revision that carried
	// the injection (a FailedCreate of the StatefulSet controller): the controller put the
	// StatefulSet back to the template that worked and does not inject again until the
	// ScratchVolume's spec, the StatefulSet's pod template or the namespace's LimitRanges and
	// ResourceQuotas change.
	//
	// +optional
	Refused *RolloutRefusal `json:"refused,omitempty"`
}

// RolloutRefusal is a rollout of the injection whose pods the API server refused to create.
type RolloutRefusal struct {
	// Message is the API server's answer, as the StatefulSet controller reported it.
	//
	// +required
	Message string `json:"message"`

	// Time is when the controller found the refusal and put the StatefulSet back.
	//
	// +required
	Time metav1.Time `json:"time"`

	// Generation is the ScratchVolume's metadata.generation the refused injection was made for.
	//
	// +required
	Generation int64 `json:"generation"`

	// TemplateHash is the hash of the StatefulSet's pod template, without the controller's
	// entries, that the refused injection was made on.
	//
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`

	// Rules is a hash of the namespace's LimitRanges and ResourceQuota limits at the time.
	//
	// +optional
	Rules string `json:"rules,omitempty"`
}

// PodLargePages is what one pod's RAM volume runs with.
type PodLargePages struct {
	// Pod is the pod's name.
	//
	// +required
	Pod string `json:"pod"`

	VolumeLargePages `json:",inline"`
}

// ScratchUsage sums up the node agents' observations of the RAM volumes of some pods. Each pod's
// figures cover the time since its agent first sampled it (the pod's start, unless the agent
// restarted since); a deleted pod's figures go with it.
type ScratchUsage struct {
	// Pods is how many pods' volumes were observed.
	//
	// +optional
	Pods int32 `json:"pods,omitempty"`

	// PeakBytes is the highest use of any one pod's volume.
	//
	// +optional
	PeakBytes int64 `json:"peakBytes,omitempty"`

	// PeakPercent is PeakBytes as a percentage of the volume's size, rounded up.
	//
	// +optional
	PeakPercent int32 `json:"peakPercent,omitempty"`

	// WindowPeakBytes is the highest use of any one pod's volume over the agents' sliding window
	// (an hour by default).
	//
	// +optional
	WindowPeakBytes int64 `json:"windowPeakBytes,omitempty"`

	// FullPods is how many of the pods had their volume found full (less than 1% free) at least
	// once: a write there failed with "No space left on device", or was about to.
	//
	// +optional
	FullPods int32 `json:"fullPods,omitempty"`

	// FullEpisodes is how many times, over all pods, a volume was found full after a sample that
	// was not.
	//
	// +optional
	FullEpisodes int64 `json:"fullEpisodes,omitempty"`

	// LastFullTime is when a volume was last found full.
	//
	// +optional
	LastFullTime *metav1.Time `json:"lastFullTime,omitempty"`

	// ObservedSince is the earliest time the figures cover.
	//
	// +optional
	ObservedSince *metav1.Time `json:"observedSince,omitempty"`
}

// FullPod remembers how many full episodes of one pod's volume the controller has already
// announced with an Event, so that each episode is announced once, across manager restarts.
type FullPod struct {
	// Pod is the pod's name.
	//
	// +required
	Pod string `json:"pod"`

	// SampledSince is the agent's SampledSince for the pod when the episodes were counted; another
	// value means a new pod or a restarted agent, whose count starts again.
	//
	// +required
	SampledSince metav1.Time `json:"sampledSince"`

	// Episodes is the agent's FullEpisodes count already announced.
	//
	// +required
	Episodes int64 `json:"episodes"`
}

// WriteCandidate is a field manager that set what a StatefulSet holds in place of the controller's
// entries, or that may have removed them.
type WriteCandidate struct {
	// FieldManager is the manager's name, as the StatefulSet's managedFields give it.
	//
	// +required
	// +kubebuilder:validation:MaxLength=128
	FieldManager string `json:"fieldManager"`

	// LastUpdate is when the manager last changed a field of the StatefulSet, as managedFields
	// record it; unset when they do not.
	//
	// +optional
	LastUpdate metav1.Time `json:"lastUpdate,omitempty"`

	// Operation is how the manager writes, as managedFields record it: Apply (server-side apply)
	// or Update (any other write). Unset for a manager listed only as a candidate remover, which
	// is always an Update.
	//
	// +optional
	// +kubebuilder:validation:Enum=Apply;Update
	Operation metav1.ManagedFieldsOperationType `json:"operation,omitempty"`

	// Owns names the entries the StatefulSet holds with other values than the controller's whose
	// fields this manager owns, as writeWar.removed names them: the manager set what is there now.
	// Empty for a candidate remover of entries that are gone, which no one owns.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	Owns []string `json:"owns,omitempty"`
}

// AppliedConfig is what a target's configuration was rendered from.
type AppliedConfig struct {
	// Generation is the ScratchVolume's metadata.generation.
	//
	// +required
	Generation int64 `json:"generation"`

	// SpecHash is a hash of the ScratchVolume's spec but spec.changes: an edit of spec.changes
	// alone (a new maintenance window) is not an edit of what the targets carry.
	//
	// +optional
	SpecHash string `json:"specHash,omitempty"`

	// TemplateHash is a hash of the StatefulSet's pod template without the controller's entries.
	//
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`

	// Version is the version of the manager that wrote the configuration; empty when it was
	// written by a release that did not record it.
	//
	// +optional
	Version string `json:"version,omitempty"`
}

// PendingChange is a change of configuration waiting for the user.
type PendingChange struct {
	// ID names the change: approve it with the annotation dbtune.io/approve-change=<ID> on the
	// ScratchVolume (several IDs separated by commas). Targets given the same change share its ID.
	//
	// +required
	ID string `json:"id"`

	// ConfigHash is the configuration hash the StatefulSet will carry once the change is applied.
	//
	// +required
	ConfigHash string `json:"configHash"`

	// WantedBy is the version of the manager that renders the change.
	//
	// +optional
	WantedBy string `json:"wantedBy,omitempty"`

	// Reason says why the configuration differs although nobody edited the ScratchVolume or the
	// StatefulSet since it was written.
	//
	// +optional
	Reason string `json:"reason,omitempty"`

	// Changes list what the change would do to the pod template and the drop-in file.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Changes []string `json:"changes,omitempty"`

	// Since is when the controller first found the change waiting.
	//
	// +optional
	Since metav1.Time `json:"since,omitempty"`

	// NextWindow is when the next maintenance window opens, if there is one.
	//
	// +optional
	NextWindow *metav1.Time `json:"nextWindow,omitempty"`
}

// WriteWar records a fight over a StatefulSet's pod template: another writer removed the
// controller's entries again and again, each restore rolled the pods, so the controller stopped
// writing to the StatefulSet.
type WriteWar struct {
	// Candidates are the field managers to name, other than the controller's. First those that
	// own a field of an entry the StatefulSet holds with other values (with owns), newest first:
	// whether they apply or update, they set what is there now. Then, when an entry is gone (or
	// changed by no manager still recorded), those that may have removed it, newest update first:
	// every manager the StatefulSet's managedFields record as updating it (an update sends the
	// whole object, and so can remove fields others own; server-side apply removes only its own).
	// The API server records who last changed each field, not who removed one, so none of those
	// is known to be the remover, and a writer that only removed fields is not recorded at all.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Candidates []WriteCandidate `json:"candidates,omitempty"`

	// Removed says which of the controller's entries were missing when it stopped.
	//
	// +optional
	// +listType=atomic
	Removed []string `json:"removed,omitempty"`

	// Holds counts the times the controller stopped writing in this fight: the first after the
	// restores the window allows, each later one after a single try that was undone again.
	//
	// +optional
	Holds int32 `json:"holds,omitempty"`

	// HeldSince is when the current hold began.
	//
	// +optional
	HeldSince metav1.Time `json:"heldSince,omitempty"`

	// RetryAt is when the controller tries once more, unless the ScratchVolume's spec changes
	// before (which tries at once). Each hold lasts twice as long as the one before, from the
	// window up to 32 windows.
	//
	// +optional
	RetryAt metav1.Time `json:"retryAt,omitempty"`

	// TriedAt is when the controller wrote again after the hold ended. Undone before a window
	// passes, the next hold begins; left alone for a window, the fight is over.
	//
	// +optional
	TriedAt metav1.Time `json:"triedAt,omitempty"`

	// ConfigHash is the configuration the controller held off with; a spec that plans another one
	// ends the hold.
	//
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
}

// TempData names a kind of temporary data a MySQL-compatible server writes.
type TempData string

// The kinds of temporary data reported in status.targets[].tempLocations.
const (
	// TempDataTmpdir: filesort merge files, MariaDB's Aria and MySQL's MyISAM on-disk internal
	// temporary tables, the TempTable engine's memory-mapped overflow files (tmpdir).
	TempDataTmpdir TempData = "Tmpdir"
	// TempDataSessionTempTablespaces: MySQL 8.0.13+ session temporary tablespaces
	// (innodb_temp_tablespaces_dir), which hold InnoDB on-disk internal temporary tables and
	// user-created temporary tables.
	TempDataSessionTempTablespaces TempData = "SessionTempTablespaces"
	// TempDataGlobalTempTablespace: the global temporary tablespace ibtmp1
	// (innodb_temp_data_file_path, in the InnoDB data home directory).
	TempDataGlobalTempTablespace TempData = "GlobalTempTablespace"
	// TempDataInnoDBTmpdir: online ALTER TABLE sort files (innodb_tmpdir).
	TempDataInnoDBTmpdir TempData = "InnoDBTmpdir"
	// TempDataReplicaLoad: a replica's SQL_LOAD-* files (replica_load_tmpdir, slave_load_tmpdir).
	TempDataReplicaLoad TempData = "ReplicaLoad"
	// TempDataSST: the staging area of a Galera state transfer ([sst] and [xtrabackup] tmpdir).
	TempDataSST TempData = "SST"
)

// TempMedium says whether temporary data is in RAM or on disk.
type TempMedium string

const (
	// TempMediumMemory is the scratch volume.
	TempMediumMemory TempMedium = "Memory"
	// TempMediumDisk is the persistent data volume, the operator's disk-backed emptyDir when the
	// data directory is on no volume, or the container's own filesystem.
	TempMediumDisk TempMedium = "Disk"
)

// TempLocation is where one kind of temporary data goes.
type TempLocation struct {
	// Data names the temporary data.
	//
	// +required
	Data TempData `json:"data"`

	// Medium is Memory (the scratch volume) or Disk.
	//
	// +required
	Medium TempMedium `json:"medium"`

	// Option is the server option that places the data, as the option file spells it.
	//
	// +optional
	Option string `json:"option,omitempty"`

	// Path is the directory in the container; empty when the server's own default stays, such as
	// ibtmp1 in the data directory.
	//
	// +optional
	Path string `json:"path,omitempty"`
}

// TempSpaceStatus is a target server's limit on temporary space, and what it does when the scratch
// volume fills.
type TempSpaceStatus struct {
	// Limit is max_tmp_total_space_usage as the injection sets it (MariaDB 11.5.1 and later);
	// unset where the server has no such limit or spec.mysql.tempSpaceLimit is None.
	//
	// +optional
	Limit *resource.Quantity `json:"limit,omitempty"`

	// SessionLimit is max_tmp_session_space_usage as the injection sets it
	// (spec.mysql.sessionTempSpacePercent); unset when none.
	//
	// +optional
	SessionLimit *resource.Quantity `json:"sessionLimit,omitempty"`

	// WhenFull says what a query, and the server, do when temporary data reaches the limit or
	// fills the volume.
	//
	// +optional
	WhenFull string `json:"whenFull,omitempty"`
}

// SizingStatus is what spec.sizing decided.
type SizingStatus struct {
	// Proposed is the size the recent peaks call for within spec.sizing's bounds, when it is at
	// least one step away from spec.size.
	//
	// +optional
	Proposed *resource.Quantity `json:"proposed,omitempty"`

	// Since is when the peaks started calling for a resize in this direction, without a break
	// since.
	//
	// +optional
	Since *metav1.Time `json:"since,omitempty"`

	// ID names the proposed resize for approval: the annotation dbtune.io/approve-change=<id>
	// lets it through outside a maintenance window.
	//
	// +optional
	ID string `json:"id,omitempty"`

	// Reason says where the proposal stands: Steady (nothing to change), NotObserved, Sustaining,
	// WaitingForInterval, MemoryLimitTooLow, RecommendOnly, AwaitingApproval,
	// AwaitingMaintenanceWindow or Resized; Message says it in words, with the figures.
	//
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message says where the proposal stands in words, with the figures it rests on.
	//
	// +optional
	Message string `json:"message,omitempty"`

	// Last is the last automatic resize, such as "512Mi → 1Gi" (the Last-Resize column).
	//
	// +optional
	Last string `json:"last,omitempty"`

	// History holds the last five automatic resizes, newest first.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	History []SizeChange `json:"history,omitempty"`
}

// SizeChange is one automatic resize and the figures behind it.
type SizeChange struct {
	// Time is when the controller wrote spec.size.
	Time metav1.Time `json:"time"`
	// From is spec.size before the resize.
	From resource.Quantity `json:"from"`
	// To is spec.size after it.
	To resource.Quantity `json:"to"`
	// WindowPeakBytes is the highest use of a pod's volume in the agents' last window when the
	// decision was made.
	WindowPeakBytes int64 `json:"windowPeakBytes"`
	// PeakBytes is the highest use of a pod's volume since the pods started.
	PeakBytes int64 `json:"peakBytes"`
	// Pods is how many pods the figures cover.
	Pods int32 `json:"pods"`
	// Since is when the peaks started calling for it.
	Since metav1.Time `json:"since"`
	// Why says what let it through: the approval, or the maintenance window.
	Why string `json:"why"`
}

// ScratchVolumeStatus is what the controller observed and did.
type ScratchVolumeStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, TargetFound, MemoryBudget, Injected, RolledOut, Conflict, Capacity and
	// ChangesPending.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// MountPath is the effective mount path (spec.mountPath or the purpose's default).
	//
	// +optional
	MountPath string `json:"mountPath,omitempty"`

	// InjectedTargets counts the selected StatefulSets whose pod template carries the volume.
	//
	// +optional
	InjectedTargets int32 `json:"injectedTargets,omitempty"`

	// PendingChanges counts the targets with a change waiting for approval or a maintenance
	// window (status.targets[].pendingChange).
	//
	// +optional
	PendingChanges int32 `json:"pendingChanges,omitempty"`

	// Targets reports each selected StatefulSet.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	Targets []ScratchTargetStatus `json:"targets,omitempty"`

	// Usage sums up how full the RAM volumes of all targets' pods have been, as the node agents
	// observed them. Absent until an agent has sampled a pod.
	//
	// +optional
	Usage *ScratchUsage `json:"usage,omitempty"`

	// RecommendedSize is the size the observed peaks call for: the 99th percentile of the pods'
	// peaks with a quarter more as margin, at least twice the current size when a volume was found
	// full (its peak was capped by the size), rounded up to a tidy quantity within the bounds of
	// spec.size. The Capacity condition says what it rests on and the memory it would free or
	// need. Applying it is up to whoever owns spec.size.
	//
	// +optional
	RecommendedSize *resource.Quantity `json:"recommendedSize,omitempty"`

	// Sizing is what spec.sizing decided: the resize the volumes' recent peaks call for, since
	// when, and why it is not applied yet; and the last automatic resizes. Unset with mode
	// Manual.
	//
	// +optional
	Sizing *SizingStatus `json:"sizing,omitempty"`

	// FullPods are the pods whose full volumes the controller has announced with an Event.
	//
	// +optional
	// +listType=map
	// +listMapKey=pod
	// +kubebuilder:validation:MaxItems=1024
	FullPods []FullPod `json:"fullPods,omitempty"`
}

// ScratchVolume gives the selected StatefulSets a RAM-backed (medium: Memory) scratch volume and,
// for MySQL-compatible servers, points tmpdir at it while every directory that must survive a
// restart stays on the persistent volume.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sv;scratch,categories=dbtune
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name of a ScratchVolume must be at most 63 characters: it names an annotation on the pod template"
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`,description="StatefulSet name (empty when a selector is used)"
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Peak-%",type=integer,JSONPath=`.status.usage.peakPercent`,description="Highest use of a pod's RAM volume, in percent of the size"
// +kubebuilder:printcolumn:name="Recommended",type=string,JSONPath=`.status.recommendedSize`,description="Size the observed peaks call for"
// +kubebuilder:printcolumn:name="Capacity",type=string,JSONPath=`.status.conditions[?(@.type=="Capacity")].reason`,description="Sufficient, NearFull, Full or NotObserved"
// +kubebuilder:printcolumn:name="Large-Pages",type=string,JSONPath=`.status.conditions[?(@.type=="LargePages")].reason`,description="AsRequested, Unsupported, Overridden, Disabled, Failed or NotObserved: the pages the pods' RAM volumes run with",priority=1
// +kubebuilder:printcolumn:name="Sizing",type=string,JSONPath=`.spec.sizing.mode`,description="Who sets spec.size: Manual (empty), Recommend or Automatic"
// +kubebuilder:printcolumn:name="Last-Resize",type=string,JSONPath=`.status.sizing.last`,description="The last automatic resize"
// +kubebuilder:printcolumn:name="Purpose",type=string,JSONPath=`.spec.purpose`
// +kubebuilder:printcolumn:name="Injected",type=integer,JSONPath=`.status.injectedTargets`,description="StatefulSets carrying the volume"
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pendingChanges`,description="StatefulSets with a change waiting for approval or a maintenance window"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Rolled-Out",type=string,JSONPath=`.status.conditions[?(@.type=="RolledOut")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ScratchVolume struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired scratch volume.
	//
	// +required
	Spec ScratchVolumeSpec `json:"spec"`

	// Status is what the controller observed and did.
	//
	// +optional
	Status ScratchVolumeStatus `json:"status,omitempty"`
}

// EffectiveMountPath is spec.mountPath, or the default mount path of the volume's purpose.
func (sv *ScratchVolume) EffectiveMountPath() string {
	if sv.Spec.MountPath != "" {
		return string(sv.Spec.MountPath)
	}
	if sv.Spec.Purpose == PurposeGeneric {
		return DefaultGenericMountPath
	}
	return DefaultMySQLTmpdirMountPath
}

// InjectionAnnotation is the pod-template annotation key this ScratchVolume sets on its targets.
func (sv *ScratchVolume) InjectionAnnotation() string {
	return InjectionAnnotationPrefix + sv.Name
}

// StateAnnotation is the pod-template annotation key recording this ScratchVolume's flags and memory.
func (sv *ScratchVolume) StateAnnotation() string {
	return StateAnnotationPrefix + sv.Name
}

// VolumeName is the name of the memory-backed emptyDir volume in the pod template.
func (sv *ScratchVolume) VolumeName() string { return dnsLabel(ObjectPrefix+"scratch-", sv.Name) }

// ConfigVolumeName is the name of the volume carrying the my.cnf drop-in file.
func (sv *ScratchVolume) ConfigVolumeName() string { return dnsLabel(ObjectPrefix+"mycnf-", sv.Name) }

// DiskVolumeName is the name of the disk-backed emptyDir that holds the must-survive directories
// when the data directory is on no persistent volume.
func (sv *ScratchVolume) DiskVolumeName() string { return dnsLabel(ObjectPrefix+"disk-", sv.Name) }

// InitContainerName is the init container that creates, on the persistent volume, the directories
// the database needs before it starts.
func (sv *ScratchVolume) InitContainerName() string { return dnsLabel(ObjectPrefix+"init-", sv.Name) }

// ConfigMapName is the name of the ConfigMap holding the my.cnf drop-in file for one target
// StatefulSet. One ConfigMap per target keeps each server-side apply whole.
func (sv *ScratchVolume) ConfigMapName(target string) string {
	return dnsSubdomain(ObjectPrefix+sv.Name+"-", target)
}

// ScratchVolumeList is a list of ScratchVolumes.
//
// +kubebuilder:object:root=true
type ScratchVolumeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ScratchVolume `json:"items"`
}
