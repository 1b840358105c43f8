//go:build realnode

package realnode_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/realnode"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// includeDir is the official MariaDB and MySQL images' include directory, where ConfigFile
// injection mounts its drop-in.
const includeDir = "/etc/mysql/conf.d"

// configDirCase is a way a pod can hold the include directory in a volume of its own: the volumes
// and the database container's mounts besides the drop-in's.
type configDirCase struct {
	name    string
	volumes []corev1.Volume
	mounts  []corev1.VolumeMount
}

func emptyDir(medium corev1.StorageMedium) corev1.VolumeSource {
	return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}}
}

// configDirCases are the layouts of hand-written and chart-made StatefulSets: an emptyDir an init
// container fills (default medium or memory, whole or through subPath, read-only or not), and
// the read-only kinds a user's own my.cnf files come in.
var configDirCases = []configDirCase{
	{name: "emptydir", volumes: []corev1.Volume{{Name: "conf", VolumeSource: emptyDir("")}},
		mounts: []corev1.VolumeMount{{Name: "conf", MountPath: includeDir}}},
	{name: "emptydir-subpath", volumes: []corev1.Volume{{Name: "conf", VolumeSource: emptyDir("")}},
		mounts: []corev1.VolumeMount{{Name: "conf", MountPath: includeDir, SubPath: "conf.d"}}},
	{name: "emptydir-memory", volumes: []corev1.Volume{{Name: "conf", VolumeSource: emptyDir(corev1.StorageMediumMemory)}},
		mounts: []corev1.VolumeMount{{Name: "conf", MountPath: includeDir}}},
	{name: "emptydir-read-only", volumes: []corev1.Volume{{Name: "conf", VolumeSource: emptyDir("")}},
		mounts: []corev1.VolumeMount{{Name: "conf", MountPath: includeDir, ReadOnly: true}}},
	{name: "configmap", volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "user-conf"}}}}},
		mounts: []corev1.VolumeMount{{Name: "conf", MountPath: includeDir}}},
	{name: "secret", volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "user-conf"}}}},
		mounts: []corev1.VolumeMount{{Name: "conf", MountPath: includeDir}}},
	{name: "projected", volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "user-conf"}}}}}}}},
		mounts: []corev1.VolumeMount{{Name: "conf", MountPath: includeDir}}},
	{name: "downward-api", volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}},
		mounts: []corev1.VolumeMount{{Name: "conf", MountPath: includeDir}}},
	// The deepest mount holds the directory: an emptyDir at conf.d inside a ConfigMap at /etc/mysql.
	{name: "emptydir-inside-configmap", volumes: []corev1.Volume{
		{Name: "etc", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "user-conf"}}}},
		{Name: "conf", VolumeSource: emptyDir("")}},
		mounts: []corev1.VolumeMount{{Name: "etc", MountPath: "/etc/mysql"}, {Name: "conf", MountPath: includeDir}}},
}

// TestConfigDirMountsOnRealNode is what the controller's ConfigDirUnusable rule rests on: for each
// way a pod can hold the include directory in a volume, the controller's verdict for a MariaDB
// StatefulSet laid out that way (inject.NewPlan, ConfigFile injection) must match what a real
// kubelet and runc do with the drop-in mounted into it as the plan renders it: a pod that starts
// and reads the file where the controller injects, a container that cannot be created where it
// refuses.
func TestConfigDirMountsOnRealNode(t *testing.T) {
	e := requireEnv(t)
	ctx := signalContext(t)
	c := startCluster(ctx, t, e, t.TempDir())
	node := startNode(ctx, t, e, c, t.TempDir())
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	ns := createNamespace(ctx, t, cs)
	userConf := map[string]string{"my.cnf": "[mysqld]\nmax_connections=50\n"}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "user-conf"}, Data: userConf}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "user-conf"}, StringData: userConf}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The drop-in and its mount, as the controller renders them for a template without a volume
	// over the include directory.
	plain, err := inject.NewPlan(configDirScratchVolume(), configDirStatefulSet(configDirCase{}), inject.Namespace{})
	if err != nil || plain.ConfigMount == nil {
		t.Fatalf("the controller does not inject a plain MariaDB StatefulSet with a drop-in: %v", err)
	}
	dropIn := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: plain.ConfigVolume.ConfigMap.Name}, Data: map[string]string{plain.ConfigKey: plain.ConfigData}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, dropIn, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range configDirCases {
		t.Run(tc.name, func(t *testing.T) {
			_, planErr := inject.NewPlan(configDirScratchVolume(), configDirStatefulSet(tc), inject.Namespace{})
			var problem *inject.Problem
			if planErr != nil && (!errors.As(planErr, &problem) || problem.Reason != v1alpha1.ReasonConfigDirUnusable) {
				t.Fatalf("the controller refuses for another reason than the include directory: %v", planErr)
			}
			injects := planErr == nil
			pod := configDirPod(tc, node.Name(), plain)
			started, how := runUntilSettled(ctx, t, cs, ns, pod, plain.ConfigMount.MountPath, plain.ConfigData)
			t.Logf("%s: on the node %s; the controller %s", tc.name, how, map[bool]string{true: "injects", false: "refuses: " + fmt.Sprint(planErr)}[injects])
			if started != injects {
				t.Errorf("%s: the real node started the container: %t, the controller injects: %t", tc.name, started, injects)
			}
			if !started && !strings.Contains(how, plain.ConfigMount.MountPath) {
				t.Errorf("%s: the container failed for another reason than the drop-in's mount: %s", tc.name, how)
			}
		})
	}
}

func configDirScratchVolume() *v1alpha1.ScratchVolume {
	return &v1alpha1.ScratchVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tmp", UID: "configdir-test"},
		Spec: v1alpha1.ScratchVolumeSpec{
			Target: v1alpha1.ScratchTarget{Name: "db"}, Size: resource.MustParse("64Mi"), Purpose: v1alpha1.PurposeMySQLTmpdir,
			MySQL:  &v1alpha1.MySQLSpec{Injection: v1alpha1.InjectionConfigFile, InnoDBTmpdir: v1alpha1.InnoDBTmpdirDisk},
			Memory: v1alpha1.MemorySpec{Accounting: v1alpha1.MemoryIgnore},
		},
	}
}

// configDirStatefulSet is a MariaDB StatefulSet in the official image's shape laid out as tc says.
func configDirStatefulSet(tc configDirCase) *appsv1.StatefulSet {
	sts := testenv.StatefulSet("default", "db", testenv.WithContainerName("mariadb"), testenv.WithImage("mariadb:11.8"))
	db := &sts.Spec.Template.Spec.Containers[0]
	db.VolumeMounts = append(db.VolumeMounts, tc.mounts...)
	sts.Spec.Template.Spec.Volumes = tc.volumes
	return sts
}

// configDirPod is a pod on the real node with tc's volumes and the drop-in mounted as the plan
// mounts it, whose container prints the drop-in and sleeps.
func configDirPod(tc configDirCase, nodeName string, plan *inject.Plan) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: tc.name},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": nodeName},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "db", Image: realnode.PauseImage, ImagePullPolicy: corev1.PullNever,
				Command:      []string{"sh", "-c", "cat " + plan.ConfigMount.MountPath + "; exec sleep 3600"},
				VolumeMounts: append(append([]corev1.VolumeMount{}, tc.mounts...), *plan.ConfigMount),
			}},
			Volumes: append(append([]corev1.Volume{}, tc.volumes...), *plan.ConfigVolume),
		},
	}
}

// runUntilSettled creates the pod and waits until its container runs and has printed the drop-in,
// or the kubelet reports that it cannot create or start it; it says which, then deletes the pod.
func runUntilSettled(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, pod *corev1.Pod, file, content string) (started bool, how string) {
	t.Helper()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		pod.Namespace = ns
		deletePod(ctx, t, cs, pod)
	}()
	waitFor(t, 2*time.Minute, "pod "+pod.Name+" running with the drop-in, or failing to start", func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if podRunning(p) {
			logs, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err == nil && strings.Contains(string(logs), strings.TrimSpace(content)) {
				started, how = true, "the container runs and reads "+file
				return true, ""
			}
			return false, fmt.Sprintf("running; log %q, %v", logs, err)
		}
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && (w.Reason == "CreateContainerError" || w.Reason == "RunContainerError" || w.Reason == "CreateContainerConfigError") {
				// runc's message names the kubelet's paths first, then the mount point and the error.
				msg := w.Message
				if i := strings.Index(msg, "to rootfs at"); i >= 0 {
					msg = msg[i:]
				}
				how = fmt.Sprintf("the container cannot start: %s: …%s", w.Reason, msg)
				return true, ""
			}
			if term := s.LastTerminationState.Terminated; term != nil && term.ExitCode != 0 {
				how = fmt.Sprintf("the container failed: %s: %s", term.Reason, term.Message)
				return true, ""
			}
		}
		return false, podSummary(p)
	})
	return started, how
}
