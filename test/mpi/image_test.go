package mpi

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// image stands in for a curated runtime's container image: there is no
// registry or container engine here, so the pod's processes are Debian's own
// binaries on this machine, and the files the image adds on top of Debian are
// laid over /etc and /home (overlayfs, in the pod's mount namespace) from here.
type image struct {
	// user is the account the image creates (useradd -m): /etc/passwd and
	// /etc/group get it, replacing any account of this machine with its name or
	// ID (the image has only Debian's system accounts besides it).
	user account
	// uid the image runs as when the pod does not say (no USER: root).
	uid int64
	// workingDir is the image's WORKDIR.
	workingDir string
	// env is the image's environment (ENV and the base image's PATH).
	env []string
	// files the image adds, by absolute path.
	files []imageFile
	// links the image has: its alternatives point mpirun at its own MPI.
	links map[string]string
}

type account struct {
	name     string
	uid, gid int64
	home     string
	shell    string
}

type imageFile struct {
	path    string
	content string
	// copyFrom is a file of this machine the image has at path instead.
	copyFrom string
	// capNetBindService gives the file the capability cap_net_bind_service=eip.
	capNetBindService bool
	// owner is the account that owns the file (COPY --chown); root if nil.
	owner *account
}

// sshPort is the port the images' sshd listens on and their ssh connects to
// (mpioperator/base's ARG port=2222, written into both configurations).
const sshPort = 2222

var mpiuser = account{name: "mpiuser", uid: 1000, gid: 1000, home: "/home/mpiuser", shell: "/bin/sh"}

// The images of the curated runtimes all build on kubeflow/mpi-operator's
// build/base (Dockerfile, sshd_config), or copy from it; mpiImage reproduces
// what they add to Debian:
//   - /etc/ssh/ssh_config: StrictHostKeyChecking no, UserKnownHostsFile
//     /dev/null, Port 2222 (the Dockerfile's sed edits);
//   - /home/mpiuser/.sshd_config: the non-root sshd's PidFile, HostKey (the
//     Trainer's private key in the SSH Secret), StrictModes no, Port 2222;
//   - the mpiuser account (uid and gid 1000, home /home/mpiuser, WORKDIR), no
//     USER (root unless the pod says otherwise);
//   - with setcapSSHD, /usr/sbin/sshd with the file capability
//     cap_net_bind_service=eip (the base's setcap): the kernel refuses to exec
//     it in a container whose capabilities lack NET_BIND_SERVICE;
//   - mpirun and mpiexec resolving to the image's one MPI (the alternatives
//     links).
//
// What it does not: the binaries are this machine's Debian bookworm
// openssh-server/client 9.2, Open MPI 4.1 and MPICH 4.0's Hydra, and the ranks
// run sh, not Python.
func mpiImage(mpirun, mpiexec string, setcapSSHD bool) image {
	img := image{
		user:       mpiuser,
		uid:        0,
		workingDir: mpiuser.home,
		env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		files: []imageFile{
			{path: "/etc/ssh/ssh_config", content: "# mpioperator/base: the Workers' host keys are new on every run, and .ssh is\n" +
				"# a read-only Secret.\nHost *\n    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n" +
				"    Port " + strconv.Itoa(sshPort) + "\n"},
			{path: "/home/mpiuser/.sshd_config", owner: &mpiuser, content: "PidFile /home/mpiuser/sshd.pid\n" +
				"HostKey /home/mpiuser/.ssh/id_rsa\nStrictModes no\nPort " + strconv.Itoa(sshPort) + "\n"},
		},
		links: map[string]string{"/etc/alternatives/mpirun": mpirun, "/etc/alternatives/mpiexec": mpiexec},
	}
	if setcapSSHD {
		img.files = append(img.files, imageFile{path: "/usr/sbin/sshd", copyFrom: "/usr/sbin/sshd", capNetBindService: true})
	}
	return img
}

// substitutes stand in for the curated runtimes' images, by repository.
var substitutes = map[string]image{
	// mpioperator/base plus Debian's openmpi-bin (v0.5.0, v0.6.0).
	"docker.io/mpioperator/openmpi": mpiImage("/usr/bin/mpirun.openmpi", "/usr/bin/mpiexec.openmpi", true),
	// The Trainer's cmd/runtimes/deepspeed/Dockerfile: Ubuntu's openssh-server
	// (no setcap) and Open MPI, the base's SSH files copied in, the same
	// mpiuser. Its Open MPI 5 and Python are not reproduced.
	"ghcr.io/kubeflow/trainer/deepspeed-runtime": mpiImage("/usr/bin/mpirun.openmpi", "/usr/bin/mpiexec.openmpi", false),
	// mpioperator/base plus Debian's mpich.
	"docker.io/mpioperator/mpich": mpiImage("/usr/bin/mpirun.mpich", "/usr/bin/mpiexec.mpich", true),
	// mpioperator/base plus Intel MPI, whose mpirun is Hydra too; Intel's
	// build is not installable here, so this is MPICH's Hydra, and without
	// oneAPI's setvars.sh (the launcher sources it only where it exists).
	"docker.io/mpioperator/intel": mpiImage("/usr/bin/mpirun.mpich", "/usr/bin/mpiexec.mpich", true),
}

// substituteFor returns the stand-in for image reference ref (tag or digest
// ignored).
func substituteFor(ref string) (image, bool) {
	repo := ref
	if i := strings.Index(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	img, ok := substitutes[repo]
	return img, ok
}

// writeLayer writes the image's files, its account and the kubelet's
// /etc/hosts into layer, a tree of absolute paths (layer/etc/..., layer/home/...)
// that the pod lays over this machine's directories.
func (img image) writeLayer(t *testing.T, layer, hosts string) {
	t.Helper()
	write := func(path, content string, mode os.FileMode, owner *account) {
		p := filepath.Join(layer, path)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), mode))
		if owner != nil {
			must(t, os.Chown(p, int(owner.uid), int(owner.gid)))
		}
	}
	u := img.user
	home := filepath.Join(layer, u.home)
	must(t, os.MkdirAll(home, 0o755))
	must(t, os.Chown(home, int(u.uid), int(u.gid)))
	write("/etc/passwd", withAccount(t, "/etc/passwd", u.name, u.uid, fmt.Sprintf("%s:x:%d:%d::%s:%s", u.name, u.uid, u.gid, u.home, u.shell)), 0o644, nil)
	write("/etc/group", withAccount(t, "/etc/group", u.name, u.gid, fmt.Sprintf("%s:x:%d:", u.name, u.gid)), 0o644, nil)
	write("/etc/hosts", hosts, 0o644, nil)
	for _, f := range img.files {
		content, mode := f.content, os.FileMode(0o644)
		if f.copyFrom != "" {
			data, err := os.ReadFile(f.copyFrom)
			must(t, err)
			content, mode = string(data), 0o755
		}
		write(f.path, content, mode, f.owner)
		if f.capNetBindService {
			must(t, os.Chmod(filepath.Join(layer, f.path), mode))
			must(t, syscall.Setxattr(filepath.Join(layer, f.path), "security.capability", netBindServiceEIP(), 0))
		}
	}
	for link, target := range img.links {
		p := filepath.Join(layer, link)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.Symlink(target, p))
	}
}

// netBindServiceEIP is the security.capability extended attribute of
// `setcap cap_net_bind_service=eip`: struct vfs_cap_data, revision 2, with
// the effective flag, permitted and inheritable CAP_NET_BIND_SERVICE (10).
func netBindServiceEIP() []byte {
	const revision2, effective, netBindService = 0x02000000, 0x1, 1 << 10
	data := make([]byte, 20)
	binary.LittleEndian.PutUint32(data[0:], revision2|effective)
	binary.LittleEndian.PutUint32(data[4:], netBindService) // permitted, low word
	binary.LittleEndian.PutUint32(data[8:], netBindService) // inheritable, low word
	return data
}

// withAccount returns this machine's passwd or group file with line for the
// image's account instead of any entry with the same name or ID.
func withAccount(t *testing.T, file, name string, id int64, line string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	must(t, err)
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		f := strings.Split(l, ":")
		if len(f) > 2 && (f[0] == name || f[2] == strconv.FormatInt(id, 10)) {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(append(out, line), "\n") + "\n"
}

// lookupUID returns the image's account with uid, if it has one.
func (img image) lookupUID(uid int64) (account, bool) {
	if uid == img.user.uid {
		return img.user, true
	}
	if uid == 0 {
		return account{name: "root", home: "/root", shell: "/bin/sh"}, true
	}
	return account{}, false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
