package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/scratchusage"
)

const (
	nodeName      = "bench-node"
	scratchVolume = "tmp"
	namespaces    = 10
)

// scratchVolumeName is the pod volume the ScratchVolume injects, named as the operator names it.
var scratchVolumeName = (&v1alpha1.ScratchVolume{ObjectMeta: metav1.ObjectMeta{Name: scratchVolume}}).VolumeName()

// podFor returns the running pod i of a one-replica MariaDB StatefulSet injected with the
// ScratchVolume, with what the API server holds for such a pod: the fake client copies all of it
// on every List, so a bare pod would understate the listing.
func podFor(i int, size resource.Quantity) *corev1.Pod {
	sts := fmt.Sprintf("mariadb-%d", i)
	name := sts + "-0"
	labels := map[string]string{"app.kubernetes.io/name": "mariadb", "app.kubernetes.io/instance": sts,
		"controller-revision-hash": sts + "-5d8f7c9b6", "statefulset.kubernetes.io/pod-name": name}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("db-%d", i%namespaces), Name: name, UID: uuid.NewUUID(), Labels: labels,
			Annotations: map[string]string{v1alpha1.InjectionAnnotationPrefix + scratchVolume: "4f1c2a9e"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts,
				UID: uuid.NewUUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Hostname:   name,
			Containers: []corev1.Container{mariadbContainer()},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + name}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: sts}}}},
				{Name: scratchVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}}},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.244.%d.%d", i/250, i%250+2),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "mariadb", Ready: true, Image: "mariadb:11.4", ContainerID: "containerd://" + string(uuid.NewUUID()),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		},
	}
}

func mariadbContainer() corev1.Container {
	mem := resource.MustParse("2Gi")
	return corev1.Container{
		Name: "mariadb", Image: "mariadb:11.4",
		Args: []string{"--tmpdir=/var/lib/mysql-tmp", "--innodb-buffer-pool-size=1G"},
		Env: []corev1.EnvVar{{Name: "MARIADB_ROOT_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "mariadb"}, Key: "root-password"}}}},
		Ports: []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: mem, corev1.ResourceCPU: resource.MustParse("500m")},
			Limits: corev1.ResourceList{corev1.ResourceMemory: mem}},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/mysql"}, {Name: "config", MountPath: "/etc/mysql/conf.d"},
			{Name: scratchVolumeName, MountPath: "/var/lib/mysql-tmp"}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("mysql")}}, PeriodSeconds: 10},
	}
}

// Pod readers the sampler is measured over.
const (
	// fakeReader is controller-runtime's fake client holding the whole pods. Its List encodes and
	// decodes the list as JSON, dearer than anything the agent does in production.
	fakeReader = "fake-client"
	// cachedReader serves List the way the agent's informer cache does.
	cachedReader = "cache-like"
)

var readers = []string{fakeReader, cachedReader}

func newReader(kind string, pods []*corev1.Pod, scheme *runtime.Scheme) (client.Reader, error) {
	switch kind {
	case fakeReader:
		b := fake.NewClientBuilder().WithScheme(scheme)
		for _, p := range pods {
			b = b.WithObjects(p.DeepCopy())
		}
		return b.Build(), nil
	case cachedReader:
		return newCachedPods(pods)
	}
	return nil, fmt.Errorf("unknown pod reader %q", kind)
}

// cachedPods serves List as the agent's informer cache serves it: from pods already cut down by the
// transform scratchusage.RestrictCache installs, deep-copying each one on every List (the cache's
// default). It leaves out the informer's indexer and watch, which a List does not touch.
type cachedPods struct{ pods []runtime.Object }

func newCachedPods(pods []*corev1.Pod) (*cachedPods, error) {
	trim, err := podTransform()
	if err != nil {
		return nil, err
	}
	c := &cachedPods{}
	for _, p := range pods {
		obj, err := trim(p.DeepCopy())
		if err != nil {
			return nil, err
		}
		c.pods = append(c.pods, obj.(runtime.Object))
	}
	return c, nil
}

// podTransform is the transform the agent's cache applies to pods, taken from RestrictCache so
// that the benchmark trims exactly what the agent trims.
func podTransform() (toolscache.TransformFunc, error) {
	for obj, by := range scratchusage.RestrictCache(cache.Options{}, nodeName).ByObject {
		if _, ok := obj.(*corev1.Pod); ok && by.Transform != nil {
			return by.Transform, nil
		}
	}
	return nil, errors.New("RestrictCache installs no pod transform")
}

func (c *cachedPods) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("the cache-like reader only lists")
}

func (c *cachedPods) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	objs := make([]runtime.Object, len(c.pods))
	for i, p := range c.pods {
		objs[i] = p.DeepCopyObject()
	}
	return apimeta.SetList(list, objs)
}

// clock is the sampler's clock, moved by the benchmark so that an hour's window can be filled in
// a moment.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) advance(d time.Duration) { c.now = c.now.Add(d) }
