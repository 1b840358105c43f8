package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// validScratchVolume is the smallest ScratchVolume the API accepts; each bad case changes one thing.
const validScratchVolume = `
apiVersion: dbtune.io/v1alpha1
kind: ScratchVolume
metadata:
  name: bad
spec:
  target:
    name: db
  size: 512Mi
`

const validReadAheadPolicy = `
apiVersion: dbtune.io/v1alpha1
kind: ReadAheadPolicy
metadata:
  name: bad
spec:
  devices:
    names: ["dm-*"]
  readAheadKiB: 131072
`

type badCase struct {
	name string
	base string
	// patch is merged into base.spec: a key set to nil removes it.
	patch string
	// want are fragments the API server's message must contain: the field and what is allowed.
	want []string
}

var badScratchVolumes = []badCase{
	{"size missing", validScratchVolume, `size: null`, []string{"spec.size", "Required value"}},
	{"size zero", validScratchVolume, `size: "0"`, []string{"spec.size", "must be a positive quantity of bytes"}},
	{"size negative", validScratchVolume, `size: -1Gi`, []string{"spec.size", "must be a positive quantity of bytes"}},
	{"size not a quantity", validScratchVolume, `size: lots`, []string{"spec.size", "must be a positive quantity of bytes such as 512Mi"}},
	{"size above maximum", validScratchVolume, `size: 65Gi`, []string{"spec.size", "must be at most 64Gi"}},
	{"size in Ti by mistake", validScratchVolume, `size: 1Ti`, []string{"spec.size", "must be at most 64Gi"}},
	{"target missing", validScratchVolume, `target: null`, []string{"spec.target", "Required value"}},
	{"target neither name nor selector", validScratchVolume, `target: {}`,
		[]string{"spec.target", "needs either name (one StatefulSet) or selector"}},
	{"target name and selector", validScratchVolume, `target: {name: db, selector: {matchLabels: {app: db}}}`,
		[]string{"spec.target", "mutually exclusive"}},
	{"empty selector", validScratchVolume, `target: {selector: {}}`,
		[]string{"spec.target", "an empty selector would select every StatefulSet"}},
	{"selector with empty matchLabels", validScratchVolume, `target: {selector: {matchLabels: {}}}`,
		[]string{"spec.target", "an empty selector would select every StatefulSet"}},
	{"selector operator unknown", validScratchVolume, `target: {selector: {matchExpressions: [{key: app, operator: Equals, values: [db]}]}}`,
		[]string{"spec.target", "operator must be one of In, NotIn, Exists, DoesNotExist"}},
	{"selector In without values", validScratchVolume, `target: {selector: {matchExpressions: [{key: app, operator: In}]}}`,
		[]string{"spec.target", "In and NotIn need at least one value"}},
	{"target name invalid", validScratchVolume, `target: {name: DB_1}`, []string{"spec.target.name", "must be a StatefulSet name"}},
	{"allowed controller with a version", validScratchVolume, `target: {name: db, allowedControllers: [{apiGroup: k8s.mariadb.com/v1alpha1, kind: MariaDB}]}`,
		[]string{"spec.target.allowedControllers[0].apiGroup", "must be an API group such as k8s.mariadb.com, without a version"}},
	{"allowed controller without a group", validScratchVolume, `target: {name: db, allowedControllers: [{kind: MariaDB}]}`,
		[]string{"spec.target.allowedControllers[0].apiGroup", "Required value"}},
	{"allowed controller kind in lower case with a dot", validScratchVolume, `target: {name: db, allowedControllers: [{apiGroup: moco.cybozu.com, kind: mysql.cluster}]}`,
		[]string{"spec.target.allowedControllers[0].kind", "must be a kind such as MariaDB"}},
	{"allowed controller listed twice", validScratchVolume,
		`target: {name: db, allowedControllers: [{apiGroup: k8s.mariadb.com, kind: MariaDB}, {apiGroup: k8s.mariadb.com, kind: MariaDB}]}`,
		[]string{"spec.target.allowedControllers[1]", "Duplicate value"}},
	{"mountPath relative", validScratchVolume, `mountPath: tmp/scratch`, []string{"spec.mountPath", "must be an absolute path"}},
	{"mountPath with ..", validScratchVolume, `mountPath: /var/lib/../scratch`, []string{"spec.mountPath", "must be a clean path"}},
	{"mountPath root", validScratchVolume, `mountPath: /`, []string{"spec.mountPath", "must not be the root directory"}},
	{"mountPath under /proc", validScratchVolume, `mountPath: /proc/scratch`, []string{"spec.mountPath", "must not be /proc, /sys, /dev or /etc"}},
	{"mountPath /etc", validScratchVolume, `mountPath: /etc`, []string{"spec.mountPath", "must not be /proc, /sys, /dev or /etc"}},
	{"mountPath under /dev", validScratchVolume, `mountPath: /dev/shm`, []string{"spec.mountPath", "must not be /proc, /sys, /dev or /etc"}},
	{"mountPath is the MySQL datadir", validScratchVolume, `mountPath: /var/lib/mysql`,
		[]string{"spec.mountPath", "must not be a database data directory"}},
	{"mountPath inside the datadir", validScratchVolume, `mountPath: /var/lib/mysql/tmp`,
		[]string{"spec.mountPath", "must not be a database data directory or lie inside one"}},
	{"mountPath is the bitnami datadir", validScratchVolume, `mountPath: /bitnami/mysql/data`,
		[]string{"spec.mountPath", "must not be a database data directory"}},
	{"mountPath is spec.mysql.dataDir", validScratchVolume, `{mountPath: /data/db, mysql: {dataDir: /data/db}}`,
		[]string{"spec.mountPath", "must not be spec.mysql.dataDir"}},
	{"purpose unknown", validScratchVolume, `purpose: Redis`,
		[]string{"spec.purpose", `Unsupported value: "Redis"`, `"MySQLTmpdir", "Generic"`}},
	{"injection mode unknown", validScratchVolume, `mysql: {injection: Env}`,
		[]string{"spec.mysql.injection", `Unsupported value: "Env"`, `"ConfigFile", "Args", "ExtraFlags"`}},
	{"session temporary tablespaces placement unknown", validScratchVolume, `mysql: {sessionTempTablespaces: Swap}`,
		[]string{"spec.mysql.sessionTempTablespaces", `Unsupported value: "Swap"`, `"Memory", "Disk"`}},
	{"session temporary tablespaces on MariaDB", validScratchVolume,
		`mysql: {flavor: MariaDB, version: "11.4", sessionTempTablespaces: Memory}`,
		[]string{"spec.mysql", "spec.mysql.sessionTempTablespaces is for MySQL and Percona Server: MariaDB has no session temporary tablespaces"}},
	{"temp space limit unknown", validScratchVolume, `mysql: {tempSpaceLimit: Half}`,
		[]string{"spec.mysql.tempSpaceLimit", `Unsupported value: "Half"`, `"Auto", "None"`}},
	{"session temp space share of no limit", validScratchVolume, `mysql: {tempSpaceLimit: None, sessionTempSpacePercent: 50}`,
		[]string{"spec.mysql", "sessionTempSpacePercent is a share of the server's limit on temporary space, which spec.mysql.tempSpaceLimit: None turns off"}},
	{"session temp space share on MySQL", validScratchVolume, `mysql: {flavor: MySQL, sessionTempSpacePercent: 50}`,
		[]string{"spec.mysql", "sessionTempSpacePercent is for MariaDB 11.5.1 and later"}},
	{"session temp space share zero", validScratchVolume, `mysql: {sessionTempSpacePercent: 0}`,
		[]string{"spec.mysql.sessionTempSpacePercent", "should be greater than or equal to 1"}},
	{"session temp space share above all", validScratchVolume, `mysql: {sessionTempSpacePercent: 101}`,
		[]string{"spec.mysql.sessionTempSpacePercent", "should be less than or equal to 100"}},
	{"automatic sizing without bounds", validScratchVolume, `sizing: {mode: Automatic}`,
		[]string{"spec.sizing", "spec.sizing.min and spec.sizing.max are required with mode Recommend or Automatic"}},
	{"recommended sizing without max", validScratchVolume, `sizing: {mode: Recommend, min: 64Mi}`,
		[]string{"spec.sizing", "spec.sizing.min and spec.sizing.max are required"}},
	{"sizing bounds upside down", validScratchVolume, `sizing: {mode: Automatic, min: 2Gi, max: 1Gi}`,
		[]string{"spec.sizing", "spec.sizing.min must not be larger than spec.sizing.max"}},
	{"sizing min below the smallest volume", validScratchVolume, `sizing: {mode: Automatic, min: 8Mi, max: 1Gi}`,
		[]string{"spec.sizing.min", "must be a whole number of bytes from 16Mi to 64Gi"}},
	{"sizing max above the largest volume", validScratchVolume, `sizing: {mode: Automatic, min: 1Gi, max: 1Ti}`,
		[]string{"spec.sizing.max", "must be a whole number of bytes from 16Mi to 64Gi"}},
	{"sizing mode unknown", validScratchVolume, `sizing: {mode: Auto, min: 1Gi, max: 2Gi}`,
		[]string{"spec.sizing.mode", `Unsupported value: "Auto"`, `"Manual", "Recommend", "Automatic"`}},
	{"sizing sustained for seconds", validScratchVolume, `sizing: {mode: Automatic, min: 1Gi, max: 2Gi, sustainFor: 30s}`,
		[]string{"spec.sizing.sustainFor", "must be whole hours and minutes from 1m to 720h"}},
	{"sizing interval too long", validScratchVolume, `sizing: {mode: Automatic, min: 1Gi, max: 2Gi, interval: 1000h}`,
		[]string{"spec.sizing.interval", "must be whole hours and minutes from 1m to 720h"}},
	{"memory accounting unknown", validScratchVolume, `memory: {accounting: Strict}`,
		[]string{"spec.memory.accounting", `Unsupported value: "Strict"`, `"Validate", "Reserve", "Ignore"`}},
	{"innodbTmpdir placement unknown", validScratchVolume, `mysql: {innodbTmpdir: Swap}`,
		[]string{"spec.mysql.innodbTmpdir", `"Disk", "Memory"`}},
	{"flavor unknown", validScratchVolume, `mysql: {flavor: Oracle}`,
		[]string{"spec.mysql.flavor", `"MySQL", "MariaDB", "PerconaServer", "PerconaXtraDBCluster"`}},
	{"mysql settings on a Generic volume", validScratchVolume, `{purpose: Generic, mysql: {injection: Args}}`,
		[]string{"spec", "spec.mysql is only allowed when spec.purpose is MySQLTmpdir"}},
	{"version malformed", validScratchVolume, `mysql: {flavor: MySQL, version: eight}`,
		[]string{"spec.mysql.version", "must look like 8.0 or 8.0.36"}},
	{"version with a number the controller does not read", validScratchVolume, `mysql: {flavor: MySQL, version: "12345.1"}`,
		[]string{"spec.mysql.version", "must have no number above 9999"}},
	{"version with a patch number above the bound", validScratchVolume, `mysql: {flavor: MySQL, version: "8.0.10000"}`,
		[]string{"spec.mysql.version", "must have no number above 9999"}},
	{"version without flavor", validScratchVolume, `mysql: {version: "8.0.36"}`,
		[]string{"spec.mysql", "needs spec.mysql.flavor"}},
	{"replica load dir on the scratch volume", validScratchVolume, `mysql: {replicaLoadDir: /var/lib/mysql-tmp/load}`,
		[]string{"spec.mysql.replicaLoadDir", "must not be on the scratch volume"}},
	{"replica load dir on a custom scratch mount", validScratchVolume, `{mountPath: /scratch, mysql: {replicaLoadDir: /scratch}}`,
		[]string{"spec.mysql.replicaLoadDir", "must not be on the scratch volume"}},
	{"replica load dir relative", validScratchVolume, `mysql: {replicaLoadDir: load}`,
		[]string{"spec.mysql.replicaLoadDir", "must be an absolute path"}},
	{"configDir /etc itself", validScratchVolume, `mysql: {configDir: /etc}`,
		[]string{"spec.mysql.configDir", "not / or /etc"}},
	{"configDir under /proc", validScratchVolume, `mysql: {configDir: /proc/conf}`,
		[]string{"spec.mysql.configDir", "must not be /proc, /sys or /dev"}},
	{"window without start", validScratchVolume, `changes: {maintenanceWindows: [{duration: 1h}]}`,
		[]string{"spec.changes.maintenanceWindows[0].start", "Required value"}},
	{"window start not a time of day", validScratchVolume, `changes: {maintenanceWindows: [{start: "25:00", duration: 1h}]}`,
		[]string{"spec.changes.maintenanceWindows[0].start", "should match"}},
	{"window day unknown", validScratchVolume, `changes: {maintenanceWindows: [{days: [Sam], start: "02:00", duration: 1h}]}`,
		[]string{"spec.changes.maintenanceWindows[0].days[0]", `Unsupported value: "Sam"`, `"Mon"`}},
	{"window day twice", validScratchVolume, `changes: {maintenanceWindows: [{days: [Sat, Sat], start: "02:00", duration: 1h}]}`,
		[]string{"spec.changes.maintenanceWindows[0].days[1]", "Duplicate value"}},
	{"window longer than a day", validScratchVolume, `changes: {maintenanceWindows: [{start: "02:00", duration: 25h}]}`,
		[]string{"spec.changes.maintenanceWindows[0].duration", "from 1m to 24h"}},
	{"window of seconds", validScratchVolume, `changes: {maintenanceWindows: [{start: "02:00", duration: 30s}]}`,
		[]string{"spec.changes.maintenanceWindows[0].duration", "whole hours and minutes"}},
	{"window duration not a duration", validScratchVolume, `changes: {maintenanceWindows: [{start: "02:00", duration: "two hours"}]}`,
		[]string{"spec.changes.maintenanceWindows[0].duration"}},
	{"window time zone with spaces", validScratchVolume, `changes: {maintenanceWindows: [{start: "02:00", duration: 1h, timeZone: "Central European Time"}]}`,
		[]string{"spec.changes.maintenanceWindows[0].timeZone", "should match"}},
	{"container name invalid", validScratchVolume, `container: Main_DB`, []string{"spec.container", "must be a container name"}},
	{"headroom negative", validScratchVolume, `memory: {headroom: -1Gi}`,
		[]string{"spec.memory.headroom", "must be a non-negative quantity of bytes"}},

	// Sizes a user means differently from what they say.
	{"size in milli-bytes (512m for 512M)", validScratchVolume, `size: 512m`,
		[]string{"spec.size", "ends in 'm', which means thousandths of a byte", "write Mi for mebibytes (512Mi) or M for megabytes (512M)"}},
	{"size below one byte in exponent form", validScratchVolume, `size: "5e-1"`, []string{"spec.size", "must be a whole number of bytes"}},
	{"size with a fraction of a byte", validScratchVolume, `size: "1.5"`, []string{"spec.size", "must be a whole number of bytes"}},
	{"size too small for a temporary table", validScratchVolume, `size: 1Ki`, []string{"spec.size", "must be at least 16Mi", "tmp_table_size"}},
	{"size just below the minimum", validScratchVolume, `size: "16777215"`, []string{"spec.size", "must be at least 16Mi"}},
	{"headroom in milli-bytes", validScratchVolume, `memory: {headroom: 256m}`,
		[]string{"spec.memory.headroom", "ends in 'm', which means thousandths of a byte"}},
	{"headroom with a fraction of a byte", validScratchVolume, `memory: {headroom: "0.5"}`,
		[]string{"spec.memory.headroom", "must be a whole number of bytes"}},
	{"size with half a byte in a binary unit", validScratchVolume, `size: "1073741824.5"`, []string{"spec.size", "must be a whole number of bytes"}},
	{"headroom of 102.4 bytes", validScratchVolume, `memory: {headroom: 0.1Ki}`,
		[]string{"spec.memory.headroom", "must be a whole number of bytes"}},
	{"headroom in exabytes", validScratchVolume, `memory: {headroom: 8E}`, []string{"spec.memory.headroom", "must be at most 1Ti"}},

	// Paths that an option file, mysqld or a mount table would read differently.
	{"mountPath with a trailing newline", validScratchVolume, "mountPath: \"/var/lib/mysql-tmp\\n\"",
		[]string{"spec.mountPath", "without whitespace, control characters"}},
	{"mountPath with a space", validScratchVolume, `mountPath: "/var/lib/mysql tmp"`, []string{"spec.mountPath", "without whitespace"}},
	{"mountPath with a tab", validScratchVolume, "mountPath: \"/scratch\\tdir\"", []string{"spec.mountPath", "without whitespace"}},
	{"mountPath with a comment sign", validScratchVolume, `mountPath: "/scratch#1"`, []string{"spec.mountPath", "# ; :"}},
	{"mountPath with a colon (tmpdir reads a list)", validScratchVolume, `mountPath: "/a:/b"`, []string{"spec.mountPath", "# ; :"}},
	{"mountPath with a quote", validScratchVolume, `mountPath: "/scratch'1"`, []string{"spec.mountPath", "option files and mount tables read them specially"}},
	{"mountPath with a backslash", validScratchVolume, `mountPath: "/scratch\\1"`, []string{"spec.mountPath", "option files and mount tables read them specially"}},
	{"mountPath with DEL", validScratchVolume, "mountPath: \"/scratch\\x7f\"", []string{"spec.mountPath", "control characters"}},
	{"mountPath with a non-ASCII letter", validScratchVolume, "mountPath: \"/scratch/\u01a0\"", []string{"spec.mountPath", "must be printable ASCII"}},
	{"dataDir is the default mount path", validScratchVolume, `mysql: {dataDir: /var/lib/mysql-tmp}`,
		[]string{"spec.mountPath", "must not be spec.mysql.dataDir, lie inside it or above it"}},
	{"dataDir below the mount path", validScratchVolume, `{mountPath: /data, mysql: {dataDir: /data/db}}`,
		[]string{"spec.mountPath", "must not be spec.mysql.dataDir, lie inside it or above it"}},
	{"mountPath is the drop-in file in configDir", validScratchVolume, `{mountPath: /srv/conf/zz-dbtune-scratch.cnf, mysql: {configDir: /srv/conf}}`,
		[]string{"spec.mountPath", "must not be spec.mysql.configDir, lie inside it or above it"}},
	{"dataDir with a semicolon", validScratchVolume, `mysql: {dataDir: "/data;rm"}`, []string{"spec.mysql.dataDir", "without whitespace"}},
	{"configDir with a space", validScratchVolume, `mysql: {configDir: "/etc/mysql/conf d"}`, []string{"spec.mysql.configDir", "without whitespace"}},
	{"replicaLoadDir with a newline", validScratchVolume, "mysql: {replicaLoadDir: \"/var/lib/mysql/load\\n\"}",
		[]string{"spec.mysql.replicaLoadDir", "without whitespace, control characters"}},

	// Label selectors Kubernetes itself would refuse to parse.
	{"selector value with a space", validScratchVolume, `target: {selector: {matchLabels: {app: "my db"}}}`,
		[]string{"spec.target.selector.matchLabels[app]", "must be a label value", "no spaces"}},
	{"selector key invalid", validScratchVolume, `target: {selector: {matchLabels: {"-app": db}}}`,
		[]string{"spec.target.selector", "every key must be a label key"}},
	{"selector key with two slashes", validScratchVolume, `target: {selector: {matchLabels: {"a/b/c": db}}}`,
		[]string{"spec.target.selector", "every key must be a label key"}},
	{"selector value too long", validScratchVolume, `target: {selector: {matchLabels: {app: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}}}`,
		[]string{"spec.target.selector.matchLabels.app", "may not be more than 63 bytes"}},
	{"selector expression key invalid", validScratchVolume, `target: {selector: {matchExpressions: [{key: "app name", operator: Exists}]}}`,
		[]string{"spec.target.selector.matchExpressions[0].key", "must be a label key such as app"}},
	{"selector expression value invalid", validScratchVolume, `target: {selector: {matchExpressions: [{key: app, operator: In, values: ["db!"]}]}}`,
		[]string{"spec.target.selector.matchExpressions[0].values[0]", "must be a label value"}},
}

// goodScratchVolumes are edge cases the API must accept: each rule above refuses only what it says.
var goodScratchVolumes = []struct{ name, patch string }{
	{"the smallest size", `size: 16Mi`},
	{"a weekend window in a time zone", `changes: {maintenanceWindows: [{days: [Sat, Sun], start: "02:00", duration: 3h, timeZone: Europe/Berlin}]}`},
	{"a window as a Go client writes its duration", `changes: {maintenanceWindows: [{start: "23:30", duration: 1h30m0s}]}`},
	{"the shortest and the longest window", `changes: {maintenanceWindows: [{start: "00:00", duration: 1m}, {start: "12:00", duration: 24h}]}`},
	{"a size in megabytes", `size: 512M`},
	{"a size in plain bytes", `size: "16777216"`},
	{"a size in exponent form", `size: "1e9"`},
	{"the largest size", `size: 64Gi`},
	{"a fraction of a binary unit that is whole in bytes", `size: 1.5Gi`},
	{"a fraction in a decimal unit that is whole in bytes", `size: 1.5G`},
	{"a whole number written with a fraction", `size: 64.0Gi`},
	{"headroom as a fraction of a binary unit", `memory: {headroom: 0.5Gi}`},
	{"a version at the bound, with leading zeros", `mysql: {flavor: MySQL, version: "09999.0.9999"}`},
	{"headroom zero", `memory: {headroom: "0"}`},
	{"headroom of a terabyte", `memory: {headroom: 1Ti}`},
	{"paths with dots, dashes, underscores and @", `{mountPath: /srv/scratch_1.tmp-a@b, mysql: {dataDir: /data/my-sql_1, configDir: /etc/my.cnf.d}}`},
	{"a selector with prefixed keys and empty values", `target: {selector: {matchLabels: {app.kubernetes.io/name: mysql, tier: ""}}}`},
	{"allowed controllers of two operators", `target: {selector: {matchLabels: {tier: db}}, allowedControllers: [{apiGroup: moco.cybozu.com, kind: MySQLCluster}, {apiGroup: k8s.mariadb.com, kind: MariaDB}]}`},
	{"a selector expression", `target: {selector: {matchExpressions: [{key: app.kubernetes.io/component, operator: In, values: [primary, replica]}]}}`},
	{"ExtraFlags injection", `mysql: {injection: ExtraFlags}`},
	{"session temporary tablespaces kept on disk for MySQL", `mysql: {flavor: MySQL, version: "8.4", sessionTempTablespaces: Disk}`},
	{"session temporary tablespaces without a flavor", `mysql: {sessionTempTablespaces: Memory}`},
	{"a session share of temporary space on MariaDB 11.8", `mysql: {flavor: MariaDB, version: "11.8", sessionTempSpacePercent: 25}`},
	{"a whole session share without a flavor", `mysql: {sessionTempSpacePercent: 100}`},
	{"a session share with the limit said Auto", `mysql: {tempSpaceLimit: Auto, sessionTempSpacePercent: 1}`},
	{"no server limit on temporary space", `mysql: {tempSpaceLimit: None}`},
	{"automatic sizing with every field", `sizing: {mode: Automatic, min: 256Mi, max: 4Gi, sustainFor: 6h, interval: 24h}`},
	{"automatic sizing at the bounds", `sizing: {mode: Automatic, min: 16Mi, max: 64Gi, sustainFor: 1m, interval: 720h}`},
	{"manual sizing says nothing more", `sizing: {mode: Manual}`},
	{"equal bounds in different units", `sizing: {mode: Recommend, min: 1Gi, max: 1024Mi}`},
	{"a server limit asked of MySQL, which has none", `mysql: {flavor: MySQL, tempSpaceLimit: Auto}`},
}

func TestAPIServerAcceptsEdgeCases(t *testing.T) {
	e := testenv.Require(t, env)
	ns := e.Namespace(t)
	for i, tc := range goodScratchVolumes {
		t.Run(tc.name, func(t *testing.T) {
			obj := patched(t, validScratchVolume, tc.patch)
			obj.SetNamespace(ns)
			obj.SetName(fmt.Sprintf("good-%d", i))
			if err := e.Client.Create(ctx(t), obj, client.DryRunAll); err != nil {
				t.Errorf("the API server refused it: %v", err)
			}
		})
	}
}

var badReadAheadPolicies = []badCase{
	{"read-ahead zero", validReadAheadPolicy, `readAheadKiB: 0`, []string{"spec.readAheadKiB", "greater than or equal to 4"}},
	{"read-ahead negative", validReadAheadPolicy, `readAheadKiB: -8`, []string{"spec.readAheadKiB", "greater than or equal to 4"}},
	{"read-ahead above maximum", validReadAheadPolicy, `readAheadKiB: 2097152`, []string{"spec.readAheadKiB", "less than or equal to 1048576"}},
	{"read-ahead missing", validReadAheadPolicy, `readAheadKiB: null`, []string{"spec.readAheadKiB", "Required value"}},
	{"mode unknown", validReadAheadPolicy, `mode: Max`, []string{"spec.mode", `Unsupported value: "Max"`, `"Set", "AtLeast"`}},
	{"device-mapper resolution unknown", validReadAheadPolicy, `devices: {names: [dm-*], deviceMapper: Top}`,
		[]string{"spec.devices.deviceMapper", `"Device", "Underlying", "Both"`}},
	{"devices missing", validReadAheadPolicy, `devices: null`, []string{"spec.devices", "Required value"}},
	{"device selector empty", validReadAheadPolicy, `devices: {}`,
		[]string{"spec.devices", "needs at least one name pattern (names) or mount path (mountPaths)"}},
	{"device selector with empty lists", validReadAheadPolicy, `devices: {names: [], mountPaths: []}`,
		[]string{"spec.devices", "needs at least one name pattern"}},
	{"device glob with unclosed set", validReadAheadPolicy, `devices: {names: ["sd[a"]}`,
		[]string{"spec.devices.names[0]", "must be a device-name pattern such as dm-*"}},
	{"device glob is a path", validReadAheadPolicy, `devices: {names: ["/dev/sda"]}`,
		[]string{"spec.devices.names[0]", "no '/'"}},
	{"device glob empty", validReadAheadPolicy, `devices: {names: [""]}`, []string{"spec.devices.names[0]", "at least 1 chars long"}},
	{"mount path relative", validReadAheadPolicy, `devices: {mountPaths: [var/lib/mysql]}`,
		[]string{"spec.devices.mountPaths[0]", "must be an absolute path"}},
	{"mount path with a space", validReadAheadPolicy, `devices: {mountPaths: ["/var/lib/my sql"]}`,
		[]string{"spec.devices.mountPaths[0]", "without whitespace"}},
	{"node selector value with a space", validReadAheadPolicy, `nodeSelector: {matchLabels: {role: "data base"}}`,
		[]string{"spec.nodeSelector.matchLabels[role]", "must be a label value"}},
	{"node selector key invalid", validReadAheadPolicy, `nodeSelector: {matchLabels: {"role!": db}}`,
		[]string{"spec.nodeSelector", "every key must be a label key"}},
	{"priority out of range", validReadAheadPolicy, `priority: 5000`, []string{"spec.priority", "less than or equal to 1000"}},
}

func TestAPIServerRejectsBadScratchVolumes(t *testing.T) {
	e := testenv.Require(t, env)
	ns := e.Namespace(t)
	if len(badScratchVolumes)+len(badReadAheadPolicies) < 25 {
		t.Fatalf("the table must cover at least 25 bad manifests")
	}
	for _, tc := range badScratchVolumes {
		t.Run(tc.name, func(t *testing.T) { expectRejected(t, e, ns, tc) })
	}
}

func TestAPIServerRejectsBadReadAheadPolicies(t *testing.T) {
	e := testenv.Require(t, env)
	for _, tc := range badReadAheadPolicies {
		t.Run(tc.name, func(t *testing.T) { expectRejected(t, e, "", tc) })
	}
}

// TestBaseManifestsAreValid guards the table above: if the base manifests were rejected, every bad
// case would pass for the wrong reason.
func TestBaseManifestsAreValid(t *testing.T) {
	e := testenv.Require(t, env)
	ns := e.Namespace(t)
	for _, base := range []string{validScratchVolume, validReadAheadPolicy} {
		obj := decode(t, base)
		obj.SetNamespace(namespaceFor(obj, ns))
		obj.SetName("valid-base")
		if err := e.Client.Create(ctx(t), obj); err != nil {
			t.Fatalf("the base %s was rejected: %v", obj.GetKind(), err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(context.Background(), obj) })
	}
}

func TestPurposeIsImmutable(t *testing.T) {
	e := testenv.Require(t, env)
	obj := decode(t, validScratchVolume)
	obj.SetNamespace(e.Namespace(t))
	if err := e.Client.Create(ctx(t), obj); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := unstructured.SetNestedField(obj.Object, "Generic", "spec", "purpose"); err != nil {
		t.Fatal(err)
	}
	err := e.Client.Update(ctx(t), obj)
	assertInvalid(t, err, []string{"spec.purpose", "spec.purpose is immutable"})
}

func expectRejected(t *testing.T, e *testenv.Env, ns string, tc badCase) {
	t.Helper()
	obj := patched(t, tc.base, tc.patch)
	obj.SetNamespace(namespaceFor(obj, ns))
	err := e.Client.Create(ctx(t), obj)
	if err == nil {
		_ = e.Client.Delete(context.Background(), obj)
	}
	assertInvalid(t, err, tc.want)
}

// patched is base with patch merged into its spec: a key set to nil removes it.
func patched(t *testing.T, base, patch string) *unstructured.Unstructured {
	t.Helper()
	obj := decode(t, base)
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	var fields map[string]any
	if err := yaml.Unmarshal([]byte(patch), &fields); err != nil {
		t.Fatalf("bad patch %q: %v", patch, err)
	}
	for k, v := range fields {
		if v == nil {
			delete(spec, k)
			continue
		}
		spec[k] = v
	}
	obj.Object["spec"] = spec
	return obj
}

func assertInvalid(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the API server accepted it; want a rejection mentioning %q", want)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error, got %v", err)
	}
	t.Logf("rejected: %v", err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the message does not mention %q:\n%v", w, err)
		}
	}
}

func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("bad manifest: %v", err)
	}
	return obj
}

func namespaceFor(obj client.Object, ns string) string {
	if obj.GetObjectKind().GroupVersionKind().Kind == "ScratchVolume" {
		return ns
	}
	return ""
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
