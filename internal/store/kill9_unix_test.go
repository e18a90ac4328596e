//go:build unix

package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"
)

// pusherMain is a process that pushes GPURENT_PUSHER_SRC to the store
// GPURENT_PUSHER_STORE, run r, again and again, rewriting its step file
// between pushes, until it is killed.
func pusherMain() {
	ctx := context.Background()
	b, err := newLocal(os.Getenv("GPURENT_PUSHER_STORE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	ids, err := LoadIdentities(os.Getenv("GPURENT_PUSHER_IDENTITY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	rcpt := ids[0].(*age.X25519Identity).Recipient()
	c := &Crypto{Recipients: []age.Recipient{rcpt}, Keys: []string{rcpt.String()}, Identities: ids, Auth: AuthKeysOf(ids), CheckAuth: true}
	seg, _ := strconv.ParseInt(os.Getenv("GPURENT_PUSHER_SEGMENT"), 10, 64)
	s := New(b, Options{Crypto: c, Host: "pusher", Segment: seg, Workers: 2, Journal: os.Getenv("GPURENT_PUSHER_JOURNAL"), Where: "kill9"})
	src := os.Getenv("GPURENT_PUSHER_SRC")
	for i := 0; ; i++ {
		os.WriteFile(filepath.Join(src, "step"), []byte(strconv.Itoa(i)), 0o644)
		if m, err := s.Push(ctx, src, "r"); err == nil {
			fmt.Println("committed", m.ID)
		}
	}
}

// TestKill9WithSharedObjects: processes that push a checkpoint whose base
// model and shards never change are killed with SIGKILL at random
// moments, one after the other, while prunes with short and long graces
// run beside them. Every checkpoint left committed must deep-verify and
// restore the base model: no object a committed checkpoint refers to is
// ever deleted, whichever checkpoint stored it.
func TestKill9WithSharedObjects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	storeDir, src := filepath.Join(dir, "store"), filepath.Join(dir, "ck")
	os.MkdirAll(filepath.Join(src, "shards"), 0o755)
	base := make([]byte, 3<<20)
	rand.Read(base)
	os.WriteFile(filepath.Join(src, "base.pt"), base, 0o644)
	for i := range 20 {
		shard := make([]byte, 50<<10)
		rand.Read(shard)
		os.WriteFile(filepath.Join(src, "shards", fmt.Sprintf("%02d.bin", i)), shard, 0o644)
	}
	own, idPath := newCrypto(t)
	own.Auth, own.CheckAuth = AuthKeysOf(own.Identities), true
	b, err := newLocal(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fails []error
	prunes, slowest := 0, time.Duration(0)
	wg.Add(1)
	go func() { // prunes, with graces short and long
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(50+mrand.IntN(250)) * time.Millisecond):
			}
			grace := []time.Duration{50 * time.Millisecond, time.Second, 10 * time.Minute}[mrand.IntN(3)]
			start := time.Now()
			_, err := New(b, Options{Crypto: own, Grace: grace}).Prune(ctx, "r", 2)
			mu.Lock()
			prunes, slowest = prunes+1, max(slowest, time.Since(start))
			if err != nil && !IsNotFound(err) {
				fails = append(fails, fmt.Errorf("prune: %w", err))
			}
			mu.Unlock()
		}
	}()
	kills, committed := 0, 0
	journal := t.TempDir()
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); kills++ {
		var out bytes.Buffer
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GPURENT_STORE_PUSHER=1", "GPURENT_PUSHER_STORE="+storeDir, "GPURENT_PUSHER_SRC="+src,
			"GPURENT_PUSHER_IDENTITY="+idPath, "GPURENT_PUSHER_JOURNAL="+journal, "GPURENT_PUSHER_SEGMENT="+[]string{"0", "400000"}[kills%2])
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+mrand.IntN(400)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		committed += strings.Count(out.String(), "committed")
	}
	close(stop)
	wg.Wait()
	for _, err := range fails {
		t.Error(err)
	}
	s := New(b, Options{Crypto: own})
	ms, err := s.List(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, m := range ms {
		for _, o := range m.Objects {
			if id, _ := objectOf("r", o.Key); id != m.ID {
				shared++
				break
			}
		}
		if _, probs, err := s.Verify(ctx, "r", m.ID, true); err != nil || len(probs) > 0 {
			t.Errorf("committed checkpoint %s: verify --deep: %v %v", m.ID, err, probs)
		}
		dest := filepath.Join(t.TempDir(), "out")
		if _, err := s.Pull(ctx, "r", m.ID, dest); err != nil {
			t.Errorf("committed checkpoint %s does not restore: %v", m.ID, err)
		} else if got, _ := os.ReadFile(filepath.Join(dest, "base.pt")); !bytes.Equal(got, base) {
			t.Errorf("committed checkpoint %s restores another base model", m.ID)
		}
	}
	t.Logf("%d pushers killed, %d commits, %d checkpoints left, %d of them referring to objects another stored; %d prunes, the slowest %v",
		kills, committed, len(ms), shared, prunes, slowest.Round(time.Millisecond))
	if committed == 0 || shared == 0 {
		t.Errorf("nothing committed (%d) or shared (%d): the test tests nothing", committed, shared)
	}
}
