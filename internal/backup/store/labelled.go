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
	"context"
	"errors"
	"io"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// labelled is a driver.Bucket over the *blob.Bucket a driver package opened,
// whose errors name the store, so that an error from a write deep in a
// backup still says which store failed. The blob drivers only construct
// *blob.Bucket values, hence a driver over a *blob.Bucket.
type labelled struct {
	b     *blob.Bucket
	label label
}

// newBucket returns a *blob.Bucket over b whose errors carry l.
func newBucket(b *blob.Bucket, l label) *blob.Bucket {
	return blob.NewBucket(&labelled{b: b, label: l})
}

// storeError is an error of a store with its label. err is the error of the
// driver, without the *blob.Bucket's decoration; blobErr is the decorated
// error, which knows its code and driver-specific types.
type storeError struct {
	label   label
	err     error
	blobErr error
}

func (e *storeError) Error() string { return e.label.String() + ": " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// wrap labels err, an error from a *blob.Bucket, leaving io.EOF and
// already labelled errors alone.
func (l label) wrap(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	var se *storeError
	if errors.As(err, &se) {
		return err
	}
	// The *blob.Bucket decorates the driver's error with its key and code,
	// which the outer *blob.Bucket adds again.
	inner := err
	var multi interface{ Unwrap() []error }
	if errors.As(err, &multi) && strings.HasPrefix(err.Error(), "blob") {
		if u := multi.Unwrap(); len(u) > 0 && u[0] != nil {
			inner = u[0]
		}
	}
	return &storeError{label: l, err: inner, blobErr: err}
}

// blobError returns the *blob.Bucket's error that err, returned by labelled,
// carries.
func blobError(err error) error {
	var se *storeError
	if errors.As(err, &se) {
		return se.blobErr
	}
	return err
}

func (b *labelled) ErrorCode(err error) gcerrors.ErrorCode { return gcerrors.Code(blobError(err)) }
func (b *labelled) As(i any) bool                          { return b.b.As(i) }
func (b *labelled) ErrorAs(err error, i any) bool          { return b.b.ErrorAs(blobError(err), i) }
func (b *labelled) Close() error                           { return b.label.wrap(b.b.Close()) }

func (b *labelled) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	a, err := b.b.Attributes(ctx, key)
	if err != nil {
		return nil, b.label.wrap(err)
	}
	return &driver.Attributes{
		CacheControl:       a.CacheControl,
		ContentDisposition: a.ContentDisposition,
		ContentEncoding:    a.ContentEncoding,
		ContentLanguage:    a.ContentLanguage,
		ContentType:        a.ContentType,
		Metadata:           a.Metadata,
		CreateTime:         a.CreateTime,
		ModTime:            a.ModTime,
		Size:               a.Size,
		MD5:                a.MD5,
		ETag:               a.ETag,
		AsFunc:             a.As,
	}, nil
}

// defaultPageSize is the page size when the caller does not choose one.
const defaultPageSize = 1000

func (b *labelled) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	size := opts.PageSize
	if size <= 0 {
		size = defaultPageSize
	}
	objs, next, err := b.b.ListPage(ctx, token, size, &blob.ListOptions{
		Prefix:     opts.Prefix,
		Delimiter:  opts.Delimiter,
		BeforeList: opts.BeforeList,
	})
	if err != nil {
		return nil, b.label.wrap(err)
	}
	page := &driver.ListPage{Objects: make([]*driver.ListObject, 0, len(objs)), NextPageToken: next}
	for _, o := range objs {
		page.Objects = append(page.Objects, &driver.ListObject{
			Key:     o.Key,
			ModTime: o.ModTime,
			Size:    o.Size,
			MD5:     o.MD5,
			IsDir:   o.IsDir,
			AsFunc:  o.As,
		})
	}
	return page, nil
}

func (b *labelled) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	r, err := b.b.NewRangeReader(ctx, key, offset, length, &blob.ReaderOptions{BeforeRead: opts.BeforeRead})
	if err != nil {
		return nil, b.label.wrap(err)
	}
	return &reader{r: r, label: b.label}, nil
}

// NewTypedWriter streams through a pipe into the *blob.Bucket's Upload. The
// drivers' own Write paths (azureblob's, at least) dereference a nil pipe
// when an upload fails after data was written; Upload does not use it.
func (b *labelled) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	pr, pw := io.Pipe()
	w := &writer{pw: pw, done: make(chan struct{}), label: b.label}
	go func() {
		defer close(w.done)
		w.err = b.b.Upload(ctx, key, pr, &blob.WriterOptions{
			BufferSize:                  opts.BufferSize,
			MaxConcurrency:              opts.MaxConcurrency,
			CacheControl:                opts.CacheControl,
			ContentDisposition:          opts.ContentDisposition,
			ContentEncoding:             opts.ContentEncoding,
			ContentLanguage:             opts.ContentLanguage,
			ContentType:                 contentType,
			ContentMD5:                  opts.ContentMD5,
			Metadata:                    opts.Metadata,
			BeforeWrite:                 opts.BeforeWrite,
			DisableContentTypeDetection: opts.DisableContentTypeDetection,
			IfNotExist:                  opts.IfNotExist,
		})
		// Unblock and fail further writes.
		if w.err != nil {
			pr.CloseWithError(w.err)
		} else {
			pr.CloseWithError(errors.New("the upload ended before the writer was closed"))
		}
	}()
	return w, nil
}

func (b *labelled) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	return b.label.wrap(b.b.Copy(ctx, dstKey, srcKey, &blob.CopyOptions{BeforeCopy: opts.BeforeCopy}))
}

func (b *labelled) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	return b.label.wrap(b.b.DeleteWithOptions(ctx, key, &blob.DeleteOptions{BeforeDelete: opts.BeforeDelete}))
}

func (b *labelled) SignedURL(ctx context.Context, key string, opts *driver.SignedURLOptions) (string, error) {
	u, err := b.b.SignedURL(ctx, key, &blob.SignedURLOptions{
		Expiry:                   opts.Expiry,
		Method:                   opts.Method,
		ContentType:              opts.ContentType,
		EnforceAbsentContentType: opts.EnforceAbsentContentType,
		BeforeSign:               opts.BeforeSign,
	})
	return u, b.label.wrap(err)
}

type reader struct {
	r     *blob.Reader
	label label
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	return n, r.label.wrap(err)
}

func (r *reader) Close() error  { return r.label.wrap(r.r.Close()) }
func (r *reader) As(i any) bool { return r.r.As(i) }

func (r *reader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

// writer feeds an upload running in its own goroutine.
type writer struct {
	pw    *io.PipeWriter
	done  chan struct{}
	err   error // of the upload, once done is closed
	label label
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.pw.Write(p)
	if err != nil {
		<-w.done
		if w.err != nil {
			err = w.err
		}
	}
	return n, w.label.wrap(err)
}

func (w *writer) Close() error {
	_ = w.pw.Close()
	<-w.done
	return w.label.wrap(w.err)
}
