package storefront

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"boxoffice/internal/awsconf"
)

// NewS3 returns an S3 client from the standard AWS configuration. A
// non-empty endpoint overrides the service address (an S3-compatible
// server, with path-style addressing); creds, when not nil, are what it
// signs with (the in-process server of dev and tests checks them).
func NewS3(ctx context.Context, endpoint, region string, creds aws.CredentialsProvider) (*s3.Client, error) {
	cfg, err := awsconf.Load(ctx, endpoint, region, creds)
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
		// Checksums only where S3 requires them: S3-compatible servers
		// return none, and the SDK would log each response it cannot check.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}), nil
}

// Bucket is where stores are published: each tenant's under its slug.
type Bucket struct {
	Client *s3.Client
	Name   string
}

// Publish uploads a built store under the tenant's prefix: hashed assets
// first (immutable), the page last, so a visitor never gets a page whose
// assets are not there yet. Assets of earlier builds stay: pages cached
// for a minute may still name them.
func (b Bucket) Publish(ctx context.Context, slug string, site Site) error {
	for name, f := range site {
		if name != "index.html" {
			if err := b.Put(ctx, slug, name, f); err != nil {
				return err
			}
		}
	}
	return b.Put(ctx, slug, "index.html", site["index.html"])
}

// Put uploads one file of a tenant's store (a picture the store shows).
func (b Bucket) Put(ctx context.Context, slug, name string, f File) error {
	_, err := b.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.Name), Key: aws.String(slug + "/" + name), Body: bytes.NewReader(f.Body),
		ContentType: aws.String(f.ContentType), CacheControl: aws.String(f.CacheControl),
	})
	if err != nil {
		return fmt.Errorf("publish %s/%s: %w", slug, name, err)
	}
	return nil
}

// PresignPut returns a URL that lets whoever holds it PUT one object of
// the content type at key, until ttl passes: uploads go straight to the
// bucket.
func (b Bucket) PresignPut(ctx context.Context, key, contentType string, ttl time.Duration) (string, error) {
	req, err := s3.NewPresignClient(b.Client).PresignPutObject(ctx, &s3.PutObjectInput{
		// Only the type is signed: every signed header is one the uploader
		// must send as signed. The store serves the upload's caching
		// (cacheControl).
		Bucket: aws.String(b.Name), Key: aws.String(key), ContentType: aws.String(contentType),
	}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("presign upload: %w", err)
	}
	return req.URL, nil
}

// UploadOrigin is the origin (scheme and host) of the URLs PresignPut
// makes: the pages that PUT to them must be allowed to connect there.
func (b Bucket) UploadOrigin(ctx context.Context) (string, error) {
	raw, err := b.PresignPut(ctx, "origin", "image/png", time.Minute)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("presigned upload URL: %w", err)
	}
	return u.Scheme + "://" + u.Host, nil
}

// Upload is an object a tenant uploaded with a presigned URL, as far as
// checking it needs: its size, declared type and first bytes.
type Upload struct {
	Size        int64
	ContentType string
	Head        []byte
}

// Inspect reads the size, type and first 512 bytes of the object at key;
// ErrNoUpload when there is none.
func (b Bucket) Inspect(ctx context.Context, key string) (Upload, error) {
	obj, err := b.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key),
		Range: aws.String("bytes=0-511")})
	if err != nil {
		var missing *types.NoSuchKey
		if errors.As(err, &missing) {
			return Upload{}, ErrNoUpload
		}
		return Upload{}, fmt.Errorf("inspect upload %s: %w", key, err)
	}
	defer obj.Body.Close()
	head, err := io.ReadAll(io.LimitReader(obj.Body, 512))
	if err != nil {
		return Upload{}, fmt.Errorf("inspect upload %s: %w", key, err)
	}
	size := aws.ToInt64(obj.ContentLength)
	if r := aws.ToString(obj.ContentRange); r != "" { // bytes 0-511/12345
		if _, total, ok := strings.Cut(r, "/"); ok {
			if n, err := strconv.ParseInt(total, 10, 64); err == nil {
				size = n
			}
		}
	}
	return Upload{Size: size, ContentType: aws.ToString(obj.ContentType), Head: head}, nil
}

// Delete removes the object at key (a refused upload).
func (b Bucket) Delete(ctx context.Context, key string) error {
	if _, err := b.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)}); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// ErrNoUpload is returned by Inspect when nothing was uploaded at the key.
var ErrNoUpload = errors.New("nothing uploaded there")

// Ensure creates the bucket when it does not exist (development).
func (b Bucket) Ensure(ctx context.Context) error {
	_, err := b.Client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b.Name)})
	if err == nil {
		return nil
	}
	if _, err := b.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b.Name)}); err != nil {
		var owned *types.BucketAlreadyOwnedByYou
		if !errors.As(err, &owned) {
			return fmt.Errorf("create bucket %s: %w", b.Name, err)
		}
	}
	return nil
}

// Server serves published stores from the bucket, as a CDN does in
// production: /s/{slug}/… by path, and any path on a host that is one of a
// tenant's store domains. It is what `boxoffice dev` puts in front of its
// in-process S3 server.
type Server struct {
	Bucket Bucket
	// SlugOfHost maps a request's host to a tenant's slug ("" when the host
	// is no store's).
	SlugOfHost func(ctx context.Context, host string) string
}

// ServeHTTP serves one store file.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Behind Fiber's adaptor the request's context is fasthttp's request,
	// which is reused once the handler returns while the S3 client's
	// transport may still look values up in it (a dial finishing later):
	// a file read needs nothing of it but a bound.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	slug, rest := "", ""
	if p, ok := strings.CutPrefix(r.URL.Path, "/s/"); ok {
		slug, rest, _ = strings.Cut(p, "/")
		if rest == "" && !strings.HasSuffix(r.URL.Path, "/") {
			// The path starts with /s/: the redirect stays on this origin.
			http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently) //nolint:gosec // G710: see above
			return
		}
	} else if s.SlugOfHost != nil {
		slug, rest = s.SlugOfHost(ctx, r.Host), strings.TrimPrefix(r.URL.Path, "/")
	}
	if slug == "" || strings.Contains(rest, "..") {
		http.NotFound(w, r)
		return
	}
	if rest == "" {
		rest = "index.html"
	}
	obj, err := s.Bucket.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket.Name), Key: aws.String(path.Join(slug, rest))})
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer obj.Body.Close()
	w.Header().Set("Content-Type", aws.ToString(obj.ContentType))
	cache := aws.ToString(obj.CacheControl)
	if cache == "" {
		// Not every S3-compatible server keeps the header: the rule is
		// the same as the publisher's.
		cache = cacheControl(rest)
	}
	w.Header().Set("Cache-Control", cache)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if strings.HasPrefix(rest, "logo/") || strings.HasPrefix(rest, "images/") {
		// A tenant's upload: shown in <img>, never run as a page of the
		// store's origin, whatever it turns out to hold.
		w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'")
	}
	w.Header().Add("Vary", "Accept-Encoding")
	if compressible(aws.ToString(obj.ContentType)) && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		// Text shrinks to a quarter or less; pictures are compressed
		// already.
		w.Header().Set("Content-Encoding", "gzip")
		z := gzip.NewWriter(w)
		_, _ = io.Copy(z, obj.Body)
		_ = z.Close()
		return
	}
	_, _ = io.Copy(w, obj.Body)
}

// compressible reports whether a file of the content type is worth
// gzipping: the page, the module, the styles.
func compressible(contentType string) bool {
	return strings.HasPrefix(contentType, "text/") || strings.Contains(contentType, "javascript") || strings.Contains(contentType, "json")
}
