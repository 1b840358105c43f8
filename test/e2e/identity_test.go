package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// identity is a ServiceAccount bound to the roles of one generated RBAC file, and a kubeconfig that
// authenticates as it with a bearer token and nothing else.
type identity struct {
	account    string
	roleFile   string
	kubeconfig string
	config     *rest.Config
	// roles names what the file granted, for messages.
	roles []string
}

func (id *identity) username() string {
	return "system:serviceaccount:" + systemNamespace + ":" + id.account
}

func (id *identity) clientset() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(id.config)
}

// tokenLifetime outlives any run of the suite; the API server restarts with the same signing key,
// so tokens survive it.
const tokenLifetime = 2 * time.Hour

func (s *suite) createIdentities(ctx context.Context) error {
	if err := s.ensureNamespace(ctx, systemNamespace); err != nil {
		return err
	}
	var err error
	if s.manager, err = s.createIdentity(ctx, managerAccount, filepath.Join("config", "rbac", "role.yaml")); err != nil {
		return err
	}
	if s.agent, err = s.createIdentity(ctx, agentAccount, filepath.Join("config", "rbac", "node-agent", "role.yaml")); err != nil {
		return err
	}
	return s.ensureLeaderElection(ctx)
}

func (s *suite) ensureNamespace(ctx context.Context, name string) error {
	err := s.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create namespace %s: %w", name, err)
	}
	return nil
}

// createIdentity makes the ServiceAccount, binds it to every role in roleFile (read now, since the
// file is generated and may have changed since the suite was written) and writes its kubeconfig.
func (s *suite) createIdentity(ctx context.Context, account, roleFile string) (*identity, error) {
	id := &identity{account: account, roleFile: roleFile, kubeconfig: filepath.Join(s.dir, account+".kubeconfig")}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: systemNamespace}}
	if err := s.admin.Create(ctx, sa); err != nil {
		return nil, fmt.Errorf("failed to create ServiceAccount %s: %w", account, err)
	}
	roles, err := readRoles(filepath.Join(s.root, roleFile))
	if err != nil {
		return nil, err
	}
	for _, role := range roles {
		if err := s.bind(ctx, role, account); err != nil {
			return nil, err
		}
		id.roles = append(id.roles, roleKind(role)+" "+role.GetName())
	}
	token, err := s.clientset.CoreV1().ServiceAccounts(systemNamespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(tokenLifetime.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to request a token for ServiceAccount %s: %w", account, err)
	}
	if err := writeKubeconfig(id.kubeconfig, s.cluster.Config(), account, token.Status.Token); err != nil {
		return nil, err
	}
	id.config, err = clientcmd.BuildConfigFromFlags("", id.kubeconfig)
	return id, err
}

// readRoles returns the ClusterRoles and Roles of a manifest file. Bindings and ServiceAccounts in it
// are skipped: the suite binds the roles to its own accounts.
func readRoles(path string) ([]client.Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var roles []client.Object
	for {
		doc := map[string]any{}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("failed to read %s: %w", path, err)
		}
		var role client.Object
		switch (&unstructured.Unstructured{Object: doc}).GetKind() {
		case "ClusterRole":
			role = &rbacv1.ClusterRole{}
		case "Role":
			role = &rbacv1.Role{}
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(doc, role); err != nil {
			return nil, fmt.Errorf("failed to read a role in %s: %w", path, err)
		}
		roles = append(roles, role)
	}
	if len(roles) == 0 {
		return nil, fmt.Errorf("%s holds no ClusterRole or Role", path)
	}
	return roles, nil
}

func roleKind(role client.Object) string {
	if _, ok := role.(*rbacv1.ClusterRole); ok {
		return "ClusterRole"
	}
	return "Role"
}

// bind creates role as it is written and binds it to the ServiceAccount; a Role without a namespace
// goes to the operator's namespace, where kustomize would put it.
func (s *suite) bind(ctx context.Context, role client.Object, account string) error {
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: systemNamespace}}
	bindingName := "e2e-" + account + "-" + role.GetName()
	var binding client.Object
	switch r := role.(type) {
	case *rbacv1.ClusterRole:
		binding = &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: bindingName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.Name},
			Subjects:   subjects,
		}
	case *rbacv1.Role:
		if r.Namespace == "" {
			r.Namespace = systemNamespace
		}
		if err := s.ensureNamespace(ctx, r.Namespace); err != nil {
			return err
		}
		binding = &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: bindingName, Namespace: r.Namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
			Subjects:   subjects,
		}
	}
	role.SetResourceVersion("")
	for _, obj := range []client.Object{role, binding} {
		if err := s.admin.Create(ctx, obj); err != nil {
			return fmt.Errorf("failed to create %s for %s: %w", obj.GetName(), account, err)
		}
	}
	return nil
}

func writeKubeconfig(path string, admin *rest.Config, user, token string) error {
	const name = "e2e"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user, Namespace: systemNamespace}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}

// leaderElectionAccess is what controller-runtime's leader election does in the election namespace.
func leaderElectionAccess() []authorizationv1.ResourceAttributes {
	var attrs []authorizationv1.ResourceAttributes
	for _, verb := range []string{"get", "create", "update"} {
		attrs = append(attrs, authorizationv1.ResourceAttributes{Namespace: systemNamespace, Group: "coordination.k8s.io", Resource: "leases", Verb: verb})
	}
	return append(attrs, authorizationv1.ResourceAttributes{Namespace: systemNamespace, Resource: "events", Verb: "create"})
}

// ensureLeaderElection grants the manager leader election in its namespace when the generated role
// does not. Deployments usually grant it with a hand-written namespaced Role beside the generated
// ClusterRole (kubebuilder's leader_election_role.yaml); the suite does the same and says so.
func (s *suite) ensureLeaderElection(ctx context.Context) error {
	denied, err := s.denied(ctx, s.manager, leaderElectionAccess())
	if err != nil || len(denied) == 0 {
		return err
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-leader-election", Namespace: systemNamespace},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	}
	s.notes = append(s.notes, fmt.Sprintf("%s does not let the manager %s in %s; the suite added Role %s",
		s.manager.roleFile, strings.Join(denied, ", "), systemNamespace, role.Name))
	return s.bind(ctx, role, managerAccount)
}

// denied returns the requests id may not make, as "verb resource". The authorizer learns about new
// bindings through a watch, so a refusal counts only when it persists for a few seconds.
func (s *suite) denied(ctx context.Context, id *identity, attrs []authorizationv1.ResourceAttributes) ([]string, error) {
	cs, err := id.clientset()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		var denied []string
		for _, a := range attrs {
			review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a},
			}, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("failed to review the access of %s: %w", id.username(), err)
			}
			if !review.Status.Allowed {
				denied = append(denied, a.Verb+" "+a.Resource)
			}
		}
		if len(denied) == 0 || time.Now().After(deadline) {
			return denied, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestOperatorRunsAsItsServiceAccounts checks the identities the two processes use: their
// kubeconfigs authenticate as the ServiceAccounts, which may not read Secrets or grant themselves
// more, so every request the processes make is judged by the generated roles alone.
func TestOperatorRunsAsItsServiceAccounts(t *testing.T) {
	s := requireSuite(t)
	t.Parallel()
	for _, note := range s.notes {
		t.Log(note)
	}
	for _, id := range []*identity{s.manager, s.agent} {
		t.Logf("%s has %v from %s", id.username(), id.roles, id.roleFile)
		cs, err := id.clientset()
		if err != nil {
			t.Fatal(err)
		}
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := review.Status.UserInfo.Username; got != id.username() {
			t.Errorf("the kubeconfig of %s authenticates as %q", id.account, got)
		}
		denied, err := s.denied(t.Context(), id, []authorizationv1.ResourceAttributes{
			{Namespace: "kube-system", Resource: "secrets", Verb: "get"},
			{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings", Verb: "create"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(denied) != 2 {
			t.Errorf("%s is refused only %v: it runs with more than its roles", id.username(), denied)
		}
	}
}
