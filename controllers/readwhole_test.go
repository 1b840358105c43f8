package controllers_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/controllers"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// getLog records the resourceVersion of each StatefulSet GET a client sends, and the status of its
// answer.
type getLog struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	gets []string
}

func (l *getLog) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(req)
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/statefulsets/") && resp != nil {
		l.mu.Lock()
		l.gets = append(l.gets, "rv="+req.URL.Query().Get("resourceVersion")+" "+strconv.Itoa(resp.StatusCode))
		l.mu.Unlock()
	}
	return resp, err
}

func (l *getLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	gets := l.gets
	l.gets = nil
	return gets
}

// TestReadWholeTakesTheWatchCachesCopy reads a StatefulSet as a sync that plans it does. The API
// server's watch cache answers, and its copy is taken when it is the object the manager's cache
// holds or a later one; a copy older than the cache's (a lower generation, the same generation
// with another controller), another object of the same name, or none is read again from etcd.
func TestReadWholeTakesTheWatchCachesCopy(t *testing.T) {
	e := startManager(t)
	ns := e.Namespace(t)
	create(t, e, mariadbStatefulSet(ns, "db"))
	cached := getSTS(t, e, ns, "db")

	log := &getLog{}
	cfg := rest.CopyConfig(e.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { log.rt = rt; return log })
	reader, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	r := &controllers.ScratchVolumeReconciler{APIReader: reader}

	older := cached.DeepCopy()
	older.Generation--
	behind := cached.DeepCopy()
	behind.Generation++
	owned := cached.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Cluster", Name: "c", UID: "u", Controller: ptr.To(true)}}
	recreated := cached.DeepCopy()
	recreated.UID = "another"
	fromCache, fromEtcd := []string{"rv=0 200"}, []string{"rv=0 200", "rv= 200"}
	for _, c := range []struct {
		name string
		sts  *appsv1.StatefulSet
		want []string
	}{
		{"the cache's version", cached, fromCache},
		{"a cache behind the watch cache", older, fromCache},
		{"a watch cache behind the cache", behind, fromEtcd},
		{"a controller the watch cache does not have yet", owned, fromEtcd},
		{"another StatefulSet of the name", recreated, fromEtcd},
	} {
		live := &appsv1.StatefulSet{}
		if err := r.ReadWhole(ctxFor(t), c.sts, live); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if live.UID != cached.UID || live.ResourceVersion != cached.ResourceVersion || len(live.Spec.Template.Spec.Containers) == 0 {
			t.Errorf("%s: read %s at %s with %d containers, want the whole StatefulSet %s at %s", c.name, live.UID, live.ResourceVersion, len(live.Spec.Template.Spec.Containers), cached.UID, cached.ResourceVersion)
		}
		if got := log.take(); !slices.Equal(got, c.want) {
			t.Errorf("%s: GETs %q, want %q", c.name, got, c.want)
		}
	}

	if err := e.Client.Delete(ctxFor(t), cached); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, func() string {
		err := r.ReadWhole(ctxFor(t), cached, &appsv1.StatefulSet{})
		if gets := log.take(); !apierrors.IsNotFound(err) || !slices.Equal(gets, []string{"rv=0 404", "rv= 404"}) {
			return fmt.Sprintf("a deleted StatefulSet read: %v after GETs %q", err, gets)
		}
		return ""
	})
}
