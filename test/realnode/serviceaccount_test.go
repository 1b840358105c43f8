//go:build realnode

package realnode_test

import (
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/test/localcluster"
	"github.com/dbtune/scratch-operator/test/realnode"
)

// tokenDir is where the ServiceAccount admission plugin mounts a pod's projected token.
const tokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// TestServiceAccountToken is the first step towards running the manager and the node agent on the
// real node: with localcluster's ServiceAccountTokens, a pod gets a projected token, the namespace
// and the cluster CA, and the API server takes the token as the pod's ServiceAccount.
func TestServiceAccountToken(t *testing.T) {
	e := requireEnv(t)
	ctx := signalContext(t)
	c := startClusterWith(ctx, t, e, t.TempDir(), func(o *localcluster.Options) { o.ServiceAccountTokens = true })
	node := startNode(ctx, t, e, c, t.TempDir())
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	ns := createNamespace(ctx, t, cs)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "token"},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": node.Name()},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "app", Image: realnode.PauseImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "echo started; exec sleep 3600"},
			}},
		},
	}
	// The admission plugin refuses pods until the namespace's default ServiceAccount exists.
	waitFor(t, time.Minute, "pod created with the default ServiceAccount", func() (bool, string) {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err == nil, "create: " + errString(err)
	})
	waitFor(t, 2*time.Minute, "pod running", func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return podRunning(p), podSummary(p)
	})
	token, err := execInPod(ctx, c.Config(), cs, pod, "cat", tokenDir+"/token")
	if err != nil {
		t.Fatal(err)
	}
	gotNS, err := execInPod(ctx, c.Config(), cs, pod, "cat", tokenDir+"/namespace")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(gotNS) != ns {
		t.Errorf("%s/namespace is %q, want %q", tokenDir, gotNS, ns)
	}
	ca, err := execInPod(ctx, c.Config(), cs, pod, "cat", tokenDir+"/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	// The pod's own view: the token and the CA it was given, against the API server's address.
	podCfg := &rest.Config{Host: c.Config().Host, BearerToken: strings.TrimSpace(token),
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(ca)}}
	podCS, err := kubernetes.NewForConfig(podCfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := podCS.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the pod's token and CA do not authenticate: %v", err)
	}
	want := "system:serviceaccount:" + ns + ":default"
	if got := review.Status.UserInfo.Username; got != want {
		t.Errorf("the pod's token authenticates as %q, want %q", got, want)
	}
	t.Logf("the pod's projected token authenticates as %s (%d bytes of CA)", review.Status.UserInfo.Username, len(ca))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
