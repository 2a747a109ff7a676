package writeback

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/reflux-dev/reflux/reverse/writeback/internal/gitserver"
)

// TestRunsInParallelAcrossRepositories proves two repositories are written
// at the same time: each Apply waits until the other has started.
func TestRunsInParallelAcrossRepositories(t *testing.T) {
	g := NewWithT(t)
	a := newFixture(t, gitserver.StartHTTP)
	b := newFixture(t, gitserver.StartHTTP)
	b.eng = a.eng
	started := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	meet := func(me, other string) ApplyFunc {
		var once sync.Once
		return func(dir string) ([]string, error) {
			once.Do(func() { close(started[me]) })
			select {
			case <-started[other]:
				return setReplicas(5)(dir)
			case <-time.After(30 * time.Second):
				return nil, errors.New("the other repository never ran concurrently")
			}
		}
	}
	var wg sync.WaitGroup
	results := make([]Result, 2)
	for i, f := range []*fixture{a, b} {
		me, other := "a", "b"
		if i == 1 {
			me, other = other, me
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = f.eng.Run(context.Background(), f.request(fp1, meet(me, other)))
		}()
	}
	wg.Wait()
	g.Expect(results[0].Outcome).To(Equal(BranchPushed), results[0].Reason)
	g.Expect(results[1].Outcome).To(Equal(BranchPushed), results[1].Reason)
}

// TestRunsSerialisedPerRepository holds the first run inside Apply and
// checks the second cannot enter Apply for the same repository until the
// first is done.
func TestRunsSerialisedPerRepository(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, gitserver.StartHTTP)
	inFirst, secondStarted, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	first := f.request(fp1, func(dir string) ([]string, error) {
		close(inFirst)
		<-release
		return setReplicas(5)(dir)
	})
	second := f.request(fp2, func(dir string) ([]string, error) {
		close(secondStarted)
		return []string{}, nil
	})
	second.Kustomization.Name = "infra"

	done := make(chan Result, 2)
	go func() { r, _ := f.eng.Run(context.Background(), first); done <- r }()
	<-inFirst
	go func() { r, _ := f.eng.Run(context.Background(), second); done <- r }()

	// The second run must not reach Apply while the first holds the lock.
	select {
	case <-secondStarted:
		t.Fatal("second run entered Apply while the first held the repository")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	g.Expect((<-done).Outcome).To(Equal(BranchPushed))
	g.Expect((<-done).Outcome).To(Equal(UpToDate))
	g.Eventually(secondStarted).Should(BeClosed())
}

func TestKeyedMutexDropsUnusedKeys(t *testing.T) {
	g := NewWithT(t)
	k := newKeyedMutex()
	unlock := k.Lock("a")
	unlockB := k.Lock("b")
	g.Expect(k.locks).To(HaveLen(2))
	unlock()
	unlockB()
	g.Expect(k.locks).To(BeEmpty())
}

func TestLockFileExcludesOtherHolders(t *testing.T) {
	g := NewWithT(t)
	path := t.TempDir() + "/repo.lock"
	unlock, err := lockFile(path)
	g.Expect(err).ToNot(HaveOccurred())
	// flock locks belong to open file descriptions, so a second open in
	// this process stands in for another process.
	got := make(chan struct{})
	go func() {
		u, err := lockFile(path)
		if err == nil {
			u()
		}
		close(got)
	}()
	g.Consistently(got, 200*time.Millisecond).ShouldNot(BeClosed())
	unlock()
	g.Eventually(got).Should(BeClosed())
}
