package admission_test

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// quantityPattern is the grammar of a Kubernetes quantity: a sign, a decimal number, and a binary
// suffix, a decimal suffix or an exponent.
var quantityPattern = regexp.MustCompile(`^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$`)

// exactBytes is the value a quantity spells, worked out here with exact fractions and without
// resource.Quantity, whose internal forms are what admission once judged by. ok is false for
// what is not a quantity.
func exactBytes(s string) (v *big.Rat, ok bool) {
	m := quantityPattern.FindStringSubmatch(s)
	if m == nil {
		return nil, false
	}
	v, ok = new(big.Rat).SetString(m[2])
	if !ok {
		return nil, false
	}
	if m[1] == "-" {
		v.Neg(v)
	}
	binary := map[string]uint{"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
	decimal := map[string]int64{"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
	suffix := m[3]
	var exp int64
	switch {
	case binary[suffix] > 0:
		return v.Mul(v, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), binary[suffix]))), true
	case strings.ContainsAny(suffix, "eE") && len(suffix) > 1:
		if _, err := fmt.Sscan(suffix[1:], &exp); err != nil || exp > 40 || exp < -40 {
			return nil, false // the test never writes one; resource.Quantity bounds them too
		}
	default:
		exp = decimal[suffix]
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(abs(exp)), nil)
	if exp < 0 {
		return v.Quo(v, new(big.Rat).SetInt(p)), true
	}
	return v.Mul(v, new(big.Rat).SetInt(p)), true
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// quantityRule is what admission must decide for a quantity field, from its exact value.
type quantityRule struct {
	field    string // as the API server names it in an Invalid error's causes
	min, max string
	// positive: zero is refused (a size must be positive).
	positive bool
}

var (
	sizeRule     = quantityRule{field: "spec.size", min: v1alpha1.MinScratchVolumeSize, max: v1alpha1.MaxScratchVolumeSize, positive: true}
	headroomRule = quantityRule{field: "spec.memory.headroom", min: "0", max: v1alpha1.MaxMemoryHeadroom}
)

// verdict is what admission must answer for s: "" to admit it, else a fragment of the refusal.
func (q quantityRule) verdict(s string) string {
	v, ok := exactBytes(s)
	if !ok {
		if _, err := resource.ParseQuantity(s); err == nil {
			// The two grammars disagree: this test's parser is wrong, not admission.
			panic(fmt.Sprintf("exactBytes cannot read %q, which resource.ParseQuantity reads", s))
		}
		return "quantity of bytes"
	}
	lo, _ := exactBytes(q.min)
	hi, _ := exactBytes(q.max)
	switch {
	case strings.HasSuffix(s, "m"):
		return "thousandths of a byte"
	case v.Cmp(hi) > 0:
		return "at most " + q.max
	case v.Sign() < 0 || (q.positive && v.Sign() == 0):
		return q.field
	case !v.IsInt():
		return "whole number of bytes"
	case v.Cmp(lo) < 0:
		return "at least " + q.min
	}
	return ""
}

// quantityForms are sizes and headrooms in every form a user writes: plain bytes, binary and
// decimal suffixes, fractions of each (whole in bytes or not), exponents, signs and spellings
// with needless zeros.
func quantityForms() []string {
	mantissas := []string{"1", "16", "64", "512", "1536", "0.5", "1.5", "1.25", "1.0", "64.0", "0.1", ".5", "5.",
		"0.015625", "1.0009765625", "1.001", "16.5", "0.0625", "63.999", "0.000000001", "1610612736", "16777216"}
	suffixes := []string{"", "Ki", "Mi", "Gi", "Ti", "k", "M", "G", "T", "m", "e3", "e6", "E9", "e-1", "e0", "e+6"}
	var out []string
	for _, m := range mantissas {
		for _, s := range suffixes {
			out = append(out, m+s)
		}
	}
	return append(out, "+1.5Gi", "-1.5Gi", "-0", "16777216000m", "0.5e-3", "1.5e3", "1500m", "0.1Ki", "1.25Gi",
		"0.5Mi", "1e9", "17179869184", "68719476736", "68719476737", "16777215", "1099511627776", "1099511627777")
}

// randomQuantity is one quantity form drawn at random, sometimes with a random mantissa.
func randomQuantity(r *rand.Rand) string {
	forms := quantityForms()
	if r.IntN(2) == 0 {
		return forms[r.IntN(len(forms))]
	}
	suffixes := []string{"Ki", "Mi", "Gi", "k", "M", "G", "e6", "e9", ""}
	return fmt.Sprintf("%d.%0*d%s", r.IntN(70), 1+r.IntN(3), r.IntN(1000), suffixes[r.IntN(len(suffixes))])
}

// checkQuantities compares admission's verdict on a spec's size and headroom with their exact
// values: a value admission admitted must be within the rules, and one it refused on that field
// must break one.
func checkQuantities(obj *unstructured.Unstructured, err error) []string {
	var failures []string
	sizeValue, _, _ := unstructured.NestedString(obj.Object, "spec", "size")
	headroomValue, _, _ := unstructured.NestedString(obj.Object, "spec", "memory", "headroom")
	for _, f := range []struct {
		rule  quantityRule
		value string
	}{{sizeRule, sizeValue}, {headroomRule, headroomValue}} {
		if f.value == "" || f.value != strings.TrimSpace(f.value) || !quantityPattern.MatchString(f.value) {
			continue // left out, or not a quantity: other rules answer
		}
		want := f.rule.verdict(f.value)
		exact, _ := exactBytes(f.value)
		switch {
		case err == nil && want != "":
			failures = append(failures, fmt.Sprintf("%s %q (%s bytes) was admitted, want it refused: %s",
				f.rule.field, f.value, exact.RatString(), want))
		case err != nil && want == "" && refusedField(err, f.rule.field):
			failures = append(failures, fmt.Sprintf("%s %q (%s bytes) was refused, want it admitted: %v",
				f.rule.field, f.value, exact.RatString(), err))
		}
	}
	return failures
}

// refusedField reports whether an Invalid error has a cause on field itself.
func refusedField(err error, field string) bool {
	for _, c := range causes(err) {
		if c == field {
			return true
		}
	}
	return false
}

// TestQuantityVerdictsFollowTheValue sends every quantity form as spec.size and as
// spec.memory.headroom, alone in an otherwise valid spec, and checks admission's answer against
// the exact number of bytes: 1.5Gi is 1610612736 bytes and must be admitted like 1610612736, and
// 0.1Ki (102.4 bytes) must be refused as not a whole number of bytes.
func TestQuantityVerdictsFollowTheValue(t *testing.T) {
	e := requireEnv(t)
	ns := e.Namespace(t)
	for _, form := range quantityForms() {
		for _, tc := range []struct {
			rule quantityRule
			in   specInput
		}{{sizeRule, base().with(size(form))}, {headroomRule, fullBase().with(headroom(form))}} {
			err := create(e.Client, tc.in.object(ns))
			want := tc.rule.verdict(form)
			exact, _ := exactBytes(form)
			switch {
			case err != nil && !apierrors.IsInvalid(err):
				t.Errorf("%s %q: the API server failed with %v", tc.rule.field, form, err)
			case want == "" && err != nil:
				t.Errorf("%s %q (%s bytes) was refused, want it admitted: %v", tc.rule.field, form, exact.RatString(), err)
			case want != "" && err == nil:
				t.Errorf("%s %q (%s bytes) was admitted, want it refused: %s", tc.rule.field, form, exact.RatString(), want)
			case want != "" && !strings.Contains(err.Error(), want):
				t.Errorf("%s %q (%s bytes) was refused with %v, want a message with %q", tc.rule.field, form, exact.RatString(), err, want)
			}
		}
	}
}

// TestExactBytes checks the test's own parser against resource.Quantity where that is exact.
func TestExactBytes(t *testing.T) {
	for _, form := range quantityForms() {
		v, ok := exactBytes(form)
		q, err := resource.ParseQuantity(form)
		if ok != (err == nil) {
			t.Errorf("%q: exactBytes ok=%v, resource.ParseQuantity error %v", form, ok, err)
			continue
		}
		if !ok || !v.IsInt() || !v.Num().IsInt64() {
			continue
		}
		if q.CmpInt64(v.Num().Int64()) != 0 {
			t.Errorf("%q: exactBytes says %s, resource.Quantity %s", form, v.RatString(), q.String())
		}
	}
}
