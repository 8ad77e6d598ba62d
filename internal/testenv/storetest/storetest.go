/*
Copyright 2026 The Steward Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package storetest starts object store emulators for tests: gofakes3 (S3)
// and fake-gcs-server (GCS) in the test's process, Azurite (Azure) as a
// Node.js process, and a directory for the file store. Each returns the
// store.Destination of an empty bucket and the credentials Secret's data to
// open it with. It is a normal package so that tests of several packages can
// import it; no production code uses it.
//
// Azurite needs Node.js. When node or npm is missing the test is skipped, or
// fails when STEWARD_REQUIRE_SERVERS=1, as in package realserver. Azurite
// itself is installed on first use into bin/azurite by hack/azurite.sh.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/steward-dev/steward/internal/backup/store"
	"github.com/steward-dev/steward/internal/testenv/realserver"
)

// Bucket is the bucket or container every emulator starts with.
const Bucket = "backups"

// S3 access key the S3 emulator accepts.
const (
	S3AccessKeyID     = "STEWARDTESTKEY"
	S3SecretAccessKey = "steward-test-secret-0123456789"
	s3Region          = "us-east-1"
)

// Azurite's well-known development account and key.
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// S3 starts gofakes3 on a free loopback port with bucket Bucket. gofakes3
// does not check requests' signatures, so the server checks AWS Signature
// Version 4 itself in front of it (see sigV4) and answers 403 to any request
// not signed with S3AccessKeyID and S3SecretAccessKey.
func S3(t testing.TB) (store.Destination, map[string][]byte) {
	t.Helper()
	s := startS3(t, nil)
	return s.Destination, s.Credentials
}

// S3Server is an S3 emulator started by S3On.
type S3Server struct {
	// Destination is bucket Bucket at the listener's address.
	Destination store.Destination
	// Credentials are the data of a store credentials Secret that opens it.
	Credentials map[string][]byte
	// Backend holds the objects. A test reads and changes them here, in
	// its own process, where the listener's address may not be reachable
	// (a listener in another network namespace).
	Backend *s3mem.Backend
}

// S3On is S3 served on l, e.g. a listener inside a local cluster's network
// that pods reach; the server closes l when the test ends.
func S3On(t testing.TB, l net.Listener) *S3Server {
	t.Helper()
	return startS3(t, l)
}

// startS3 starts the emulator on l, or on a free loopback port when l is
// nil.
func startS3(t testing.TB, l net.Listener) *S3Server {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(Bucket); err != nil {
		t.Fatal(err)
	}
	faker := gofakes3.New(backend, gofakes3.WithGlobalLog(), gofakes3.WithLogger(gofakes3.DiscardLog()))
	url := serve(t, sigV4(S3AccessKeyID, S3SecretAccessKey, s3Region, faker.Server()), l)
	return &S3Server{
		Destination: store.Destination{Type: store.TypeS3, Bucket: Bucket, Endpoint: url, Region: s3Region},
		Credentials: map[string][]byte{
			store.AWSAccessKeyID:     []byte(S3AccessKeyID),
			store.AWSSecretAccessKey: []byte(S3SecretAccessKey),
		},
		Backend: backend,
	}
}

// serve serves h on l, or on a free loopback port when l is nil, until the
// test ends and returns its URL.
func serve(t testing.TB, h http.Handler, l net.Listener) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if l != nil {
		_ = srv.Listener.Close()
		srv.Listener = l
	}
	srv.Config.ErrorLog = nil
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// GCS starts fake-gcs-server over plain HTTP on a free loopback port with
// bucket Bucket. It accepts any request, authenticated or not, so the
// Secret is empty and the store is opened anonymously.
func GCS(t testing.TB) (store.Destination, map[string][]byte) {
	t.Helper()
	port := realserver.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme:      "http",
		Host:        "127.0.0.1",
		Port:        uint16(port),
		ExternalURL: url,
		PublicHost:  fmt.Sprintf("127.0.0.1:%d", port),
		Writer:      discard{},
	})
	if err != nil {
		t.Fatalf("starting fake-gcs-server: %v", err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: Bucket})
	return store.Destination{Type: store.TypeGCS, Bucket: Bucket, Endpoint: url}, map[string][]byte{}
}

// syncBuilder collects a process's output, written and read concurrently.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// File returns a destination in a directory of the test that does not
// exist yet.
func File(t testing.TB) (store.Destination, map[string][]byte) {
	t.Helper()
	return store.Destination{Type: store.TypeFile, Bucket: filepath.Join(t.TempDir(), Bucket)}, map[string][]byte{}
}

// Azurite starts azurite-blob, in memory, on a free loopback port, creates
// container Bucket, and stops the process when the test ends. The Secret
// holds the development account's shared key.
func Azurite(t testing.TB) (store.Destination, map[string][]byte) {
	t.Helper()
	exe := AzuriteBinary(t)
	port := realserver.FreePort(t)
	dir := t.TempDir()
	cmd := exec.Command(exe,
		"--blobHost", "127.0.0.1", "--blobPort", fmt.Sprint(port),
		"--inMemoryPersistence",
		"--silent", "--skipApiVersionCheck", "--disableTelemetry")
	cmd.Dir = dir
	var out syncBuilder
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	// done is closed when the process has exited, with its error in waitErr.
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			// The process group: azurite-blob is a node script that may
			// start children.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
		})
	}
	t.Cleanup(stop)

	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("azurite-blob exited before listening (%v): %s", waitErr, out.String())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("azurite-blob did not listen on %s within a minute: %s", addr, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	endpoint := fmt.Sprintf("http://%s/%s", addr, AzuriteAccount)
	cred, err := container.NewSharedKeyCredential(AzuriteAccount, AzuriteKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(endpoint+"/"+Bucket, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Create(ctx, nil); err != nil {
		t.Fatalf("creating container %s in Azurite: %v", Bucket, err)
	}
	return store.Destination{Type: store.TypeAzure, Bucket: Bucket, Endpoint: endpoint},
		map[string][]byte{
			store.AzureStorageAccount: []byte(AzuriteAccount),
			store.AzureStorageKey:     []byte(AzuriteKey),
		}
}

// AzuriteBinary returns the path of azurite-blob, installing it into the
// module's bin/azurite with hack/azurite.sh when it is missing. Without
// Node.js the test is skipped, or fails when STEWARD_REQUIRE_SERVERS=1.
func AzuriteBinary(t testing.TB) string {
	t.Helper()
	realserver.Require(t, realserver.Binaries{Package: "nodejs npm", Names: []string{"node", "npm"}})
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(root, "bin", "azurite", "node_modules", ".bin", "azurite-blob")
	if fi, err := os.Stat(exe); err == nil && !fi.IsDir() {
		return exe
	}
	azuriteInstall.Do(func() {
		cmd := exec.Command(filepath.Join(root, "hack", "azurite.sh"))
		cmd.Dir = root
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			azuriteErr = fmt.Errorf("hack/azurite.sh: %w: %s", err, stderr.String())
			return
		}
		azuriteExe = strings.TrimSpace(string(out))
	})
	if azuriteErr != nil {
		if os.Getenv(realserver.RequireEnv) == "1" {
			t.Fatalf("installing Azurite: %v", azuriteErr)
		}
		t.Skipf("skipping: installing Azurite: %v; set %s=1 to fail instead", azuriteErr, realserver.RequireEnv)
	}
	return azuriteExe
}

var (
	azuriteInstall sync.Once
	azuriteExe     string
	azuriteErr     error
)

// moduleRoot returns the directory of go.mod above the working directory,
// which is a package's directory under go test.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
