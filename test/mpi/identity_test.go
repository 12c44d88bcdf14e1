package mpi

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// identity is who the container's processes run as.
type identity struct {
	uid, gid   int64
	fsGroup    *int64
	groups     []int64
	noNewPrivs bool
	// boundingSet is the container's capabilities (setpriv's names).
	boundingSet    []string
	home, username string
}

// identityOf resolves the user, groups and privileges as the kubelet and a
// container runtime do: the container's security context over the pod's over
// the image's USER; the primary group from the image's account; fsGroup and
// supplementalGroups as supplementary groups.
func identityOf(spec corev1.PodSpec, c corev1.Container, img image) (identity, error) {
	psc := ptr.Deref(spec.SecurityContext, corev1.PodSecurityContext{})
	csc := ptr.Deref(c.SecurityContext, corev1.SecurityContext{})
	id := identity{uid: img.uid, fsGroup: psc.FSGroup}
	if psc.RunAsUser != nil {
		id.uid = *psc.RunAsUser
	}
	if csc.RunAsUser != nil {
		id.uid = *csc.RunAsUser
	}
	nonRoot := ptr.Deref(csc.RunAsNonRoot, ptr.Deref(psc.RunAsNonRoot, false))
	if nonRoot && id.uid == 0 {
		return id, errors.New("container has runAsNonRoot and the image runs as root (the kubelet refuses to start it)")
	}
	acct, known := img.lookupUID(id.uid)
	id.home, id.username = "/", ""
	if known {
		id.gid, id.home, id.username = acct.gid, acct.home, acct.name
	}
	if g := ptr.Deref(csc.RunAsGroup, ptr.Deref(psc.RunAsGroup, -1)); g >= 0 {
		id.gid = g
	}
	if psc.FSGroup != nil {
		id.groups = append(id.groups, *psc.FSGroup)
	}
	id.groups = append(id.groups, psc.SupplementalGroups...)
	id.noNewPrivs = csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation
	id.boundingSet = boundingSet(csc.Capabilities)
	return id, nil
}

// setpriv is the command prefix that becomes the identity.
func (id identity) setpriv() []string {
	args := []string{"setpriv", "--reuid=" + strconv.FormatInt(id.uid, 10), "--regid=" + strconv.FormatInt(id.gid, 10)}
	if len(id.groups) == 0 {
		args = append(args, "--clear-groups")
	} else {
		var gs []string
		for _, g := range id.groups {
			gs = append(gs, strconv.FormatInt(g, 10))
		}
		args = append(args, "--groups="+strings.Join(gs, ","))
	}
	if id.noNewPrivs {
		args = append(args, "--no-new-privs")
	}
	// The runtime gives the container only its capabilities, none inheritable
	// (containerd since 1.6.18).
	bset := "-all"
	for _, c := range id.boundingSet {
		bset += ",+" + c
	}
	args = append(args, "--bounding-set="+bset, "--inh-caps=-all")
	return append(args, "--")
}

// defaultCaps is the capability set containerd and Docker give a container.
var defaultCaps = []string{"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}

// boundingSet is the container's capability set: the default, minus drop
// (ALL: every one), plus add; in setpriv's lower-case names.
func boundingSet(caps *corev1.Capabilities) []string {
	set := slices.Clone(defaultCaps)
	if caps != nil {
		for _, d := range caps.Drop {
			set = slices.DeleteFunc(set, func(c string) bool { return d == "ALL" || c == string(d) })
		}
		for _, a := range caps.Add {
			set = append(set, string(a))
		}
	}
	out := make([]string, len(set))
	for i, c := range set {
		out[i] = strings.ToLower(strings.TrimPrefix(c, "CAP_"))
	}
	return out
}

// env is the container's environment as the runtime builds it: the image's,
// HOSTNAME, HOME from the account, then the container's env.
func containerEnv(p *pod, c corev1.Container, id identity) ([]string, error) {
	env := append([]string{}, p.img.env...)
	env = append(env, "HOSTNAME="+p.hostname, "HOME="+id.home)
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return nil, fmt.Errorf("env %s uses valueFrom, which the test does not resolve", e.Name)
		}
		env = append(env, e.Name+"="+e.Value)
	}
	return env, nil
}
