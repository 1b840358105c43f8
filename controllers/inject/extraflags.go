package inject

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
)

// EnvFlags are server flags added to an environment variable whose words the image's start script
// appends to the server's command line (Bitnami's MYSQL_EXTRA_FLAGS and MARIADB_EXTRA_FLAGS: run.sh
// splits the value on whitespace, `read -r -a`, and passes the words after --defaults-file, so they
// win over the chart's my.cnf).
type EnvFlags struct {
	Env   string
	Flags []string
}

// planExtraFlags adds the settings, as flags, to the image's extra-flags variable. The user's own
// value stays in front of them; a value from a ConfigMap or Secret cannot be read or extended and is
// refused, as are flags of the user's that set what the ScratchVolume sets.
func (p *Plan) planExtraFlags(c *corev1.Container, profile mysql.Profile, l mysql.Layout) error {
	if profile.ExtraFlagsEnv == "" {
		return problemf(v1alpha1.ReasonArgsIgnored,
			"image %s is not a Bitnami MySQL or MariaDB image, so no start script of it reads an extra-flags variable: use spec.mysql.injection: ConfigFile or Args",
			c.Image)
	}
	env := profile.ExtraFlagsEnv
	if err := p.checkFlagsOnly(c, profile, env); err != nil {
		return err
	}
	flags := mysql.Args(profile, l)
	if v := findEnv(c.Env, env); v != nil {
		if v.ValueFrom != nil {
			return problemf(v1alpha1.ReasonExtraFlagsNotMergeable,
				"container %s takes %s from a reference (valueFrom), which the ScratchVolume can neither read nor add its flags to: set it as a literal value (the chart's extraFlags), or use spec.mysql.injection: ConfigFile with spec.mysql.configDir",
				c.Name, env)
		}
		if err := checkFlagConflicts(c, strings.Fields(v.Value), flags, env); err != nil {
			return err
		}
	}
	p.ExtraFlags = &EnvFlags{Env: env, Flags: flags}
	return nil
}

func findEnv(env []corev1.EnvVar, name string) *corev1.EnvVar {
	for i := range env {
		if env[i].Name == name {
			return &env[i]
		}
	}
	return nil
}

// mergeEnv sets name to its current value followed by flags, appending the variable when the
// container does not set it. It returns the new list, the value before (nil when unset) and after.
// A variable taken from a reference is left alone (planExtraFlags refuses it; this only matters for
// an injection kept while the user changed the variable).
func mergeEnv(env []corev1.EnvVar, name string, flags []string) (out []corev1.EnvVar, before *string, after string) {
	out = append([]corev1.EnvVar(nil), env...)
	words := strings.Join(flags, " ")
	if v := findEnv(out, name); v != nil {
		if v.ValueFrom != nil {
			return env, nil, ""
		}
		was := v.Value
		v.Value = strings.TrimSpace(strings.TrimSpace(was) + " " + words)
		return out, &was, v.Value
	}
	return append(out, corev1.EnvVar{Name: name, Value: words}), nil, words
}

// undoEnv takes o's flags back out of the container's environment: the recorded value before when
// the variable still holds what was written, else (someone edited it since) only our words, from the
// end, keeping their edit.
func undoEnv(env []corev1.EnvVar, o override) []corev1.EnvVar {
	out := append([]corev1.EnvVar(nil), env...)
	for i := range out {
		v := &out[i]
		if v.Name != o.Env || v.ValueFrom != nil {
			continue
		}
		switch {
		case v.Value == o.EnvAfter && o.EnvBefore != nil:
			v.Value = *o.EnvBefore
			return out
		case v.Value == o.EnvAfter:
			return removeEnv(out, i)
		}
		words := strings.Fields(v.Value)
		if n := len(o.EnvFlags); len(words) >= n && strings.Join(words[len(words)-n:], " ") == strings.Join(o.EnvFlags, " ") {
			v.Value = strings.Join(words[:len(words)-n], " ")
		}
		return out
	}
	return out
}

func removeEnv(env []corev1.EnvVar, i int) []corev1.EnvVar {
	if len(env) == 1 {
		return nil
	}
	return slices.Delete(env, i, i+1)
}
