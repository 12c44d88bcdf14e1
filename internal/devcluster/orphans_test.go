package devcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReapOrphanedControlPlanesKillsOnlyOrphans: of two processes run from
// the control plane's folder, the one whose parent is gone is killed and the
// one whose parent (this test) is alive is not; a process from elsewhere is
// never looked at.
func TestReapOrphanedControlPlanesKillsOnlyOrphans(t *testing.T) {
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	bin, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "kube-apiserver")
	if err := os.WriteFile(fake, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// An orphan: started by a shell that exits at once.
	out, err := exec.Command("sh", "-c", fake+" 60 >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exec.Command("kill", "-9", strconv.Itoa(orphan)).Run() }()
	// Our own child, as a running suite's control plane is.
	child := exec.Command(fake, "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()

	var ppid int
	for range 100 { // the shell may not have exited yet
		if st, err := ReadProcStat(orphan); err == nil {
			if ppid = st.PPID; ppid == 1 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ppid != 1 {
		t.Skipf("the orphan's parent is %d, not 1: this machine re-parents orphans to a subreaper, which the reaper does not look for", ppid)
	}

	killed, err := reapOrphanedControlPlanes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(killed, []int{orphan}) {
		t.Fatalf("killed %v, want only the orphan %d (our child is %d)", killed, orphan, child.Process.Pid)
	}
	if !alive(child.Process.Pid) {
		t.Errorf("our own child %d was killed", child.Process.Pid)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(orphan) {
		if time.Now().After(deadline) {
			t.Fatalf("the orphan %d still runs", orphan)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive says whether pid runs (a zombie has ended and only waits to be reaped).
func alive(pid int) bool {
	st, err := ReadProcStat(pid)
	return err == nil && st.State != "Z"
}
