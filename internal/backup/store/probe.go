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

package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"gocloud.dev/blob"
)

// ProbeKeyPrefix starts the key, under the destination's prefix, of the
// object that Probe writes and deletes.
const ProbeKeyPrefix = "steward-destination-check-"

// ProbeTimeout bounds Probe when its context has no earlier deadline.
const ProbeTimeout = time.Minute

// probeData is the content of Probe's object.
var probeData = []byte("Written by Steward to check that backups can be stored here; it deletes this object at once.\n")

// Probe checks that b can hold backups: it lists b as Check does, then
// writes a small object, reads it back and deletes it, as a backup, a
// restore and pruning do. The error says which step failed and wraps
// ErrUnreachable, ErrCredentialsRefused or ErrBucketNotFound when it is
// one of those. When ctx has no deadline, Probe gives up after
// ProbeTimeout.
func Probe(ctx context.Context, b *blob.Bucket) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ProbeTimeout)
		defer cancel()
	}
	if _, _, err := b.ListPage(ctx, blob.FirstPageToken, 1, nil); err != nil {
		return fmt.Errorf("%w: listing: %w", classify(err), err)
	}
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return fmt.Errorf("choosing the test object's key: %w", err)
	}
	key := ProbeKeyPrefix + hex.EncodeToString(nonce[:])
	if err := b.WriteAll(ctx, key, probeData, &blob.WriterOptions{ContentType: "text/plain"}); err != nil {
		return fmt.Errorf("%w: writing the test object %s: %w", classify(err), key, err)
	}
	got, err := b.ReadAll(ctx, key)
	if err == nil && !bytes.Equal(got, probeData) {
		err = fmt.Errorf("the test object %s read back has %d bytes that differ from the %d written", key, len(got), len(probeData))
	}
	if err != nil {
		// Leave nothing behind, if the store lets us.
		_ = b.Delete(context.WithoutCancel(ctx), key)
		return fmt.Errorf("%w: reading back the test object %s: %w", classifyRead(err), key, err)
	}
	if err := b.Delete(ctx, key); err != nil {
		return fmt.Errorf("%w: deleting the test object %s, which is left behind: %w", classify(err), key, err)
	}
	return nil
}

// errCheckFailed is what a failure of Probe's own comparison wraps.
var errCheckFailed = errors.New("store check failed")

// classifyRead classifies an error of Probe's read, which is either the
// store's or Probe's own comparison.
func classifyRead(err error) error {
	var se *storeError
	if !errors.As(err, &se) {
		return errCheckFailed
	}
	return classify(err)
}
