package devs3_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/devs3"
	"boxoffice/internal/storefront"
)

func put(t *testing.T, target, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, target, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	msg, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(msg)
}

// The dev S3 takes what its own clients sign and what their presigned URLs
// allow, and nothing else: no unsigned writes, no other key than the one
// presigned, no other credentials, no expired or altered URL.
func TestOnlySignedRequestsReachTheBucket(t *testing.T) {
	t.Parallel()
	srv, err := devs3.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	client, err := storefront.NewS3(ctx, srv.URL, "us-east-1", srv.Provider())
	require.NoError(t, err)
	bucket := storefront.Bucket{Client: client, Name: "stores"}
	require.NoError(t, bucket.Ensure(ctx))

	// The process's own client: publish, inspect and delete work.
	require.NoError(t, bucket.Publish(ctx, "acme", storefront.Site{"index.html": {Body: []byte("<h1>Acme</h1>"), ContentType: "text/html"}}))
	up, err := bucket.Inspect(ctx, "acme/index.html")
	require.NoError(t, err)
	require.Equal(t, "<h1>Acme</h1>", string(up.Head))

	// A presigned URL writes its own key, with its type, once.
	signed, err := bucket.PresignPut(ctx, "acme/logo/a.png", "image/png", time.Minute)
	require.NoError(t, err)
	code, msg := put(t, signed, "image/png", "\x89PNG fake")
	require.Equal(t, http.StatusOK, code, msg)
	up, err = bucket.Inspect(ctx, "acme/logo/a.png")
	require.NoError(t, err)
	require.Equal(t, "image/png", up.ContentType)

	u, err := url.Parse(signed)
	require.NoError(t, err)
	other := *u
	other.Path = "/stores/globex/index.html"
	code, msg = put(t, other.String(), "image/png", "<script>defaced</script>")
	require.Equal(t, http.StatusForbidden, code, "another tenant's key with this URL")
	require.Contains(t, msg, "SignatureDoesNotMatch")

	code, _ = put(t, signed, "text/html", "<script>")
	require.Equal(t, http.StatusForbidden, code, "another type than the one signed")

	tampered := *u
	q := tampered.Query()
	q.Set("X-Amz-Expires", "604800")
	tampered.RawQuery = q.Encode()
	code, _ = put(t, tampered.String(), "image/png", "x")
	require.Equal(t, http.StatusForbidden, code, "a longer life than signed")

	code, msg = put(t, srv.URL+"/stores/globex/index.html", "text/html", "<script>defaced</script>")
	require.Equal(t, http.StatusForbidden, code, "unsigned")
	require.Contains(t, msg, "AccessDenied")

	// Someone else's credentials, as the public dummy ones were.
	stranger, err := storefront.NewS3(ctx, srv.URL, "us-east-1", credentials.NewStaticCredentialsProvider("local", "local", ""))
	require.NoError(t, err)
	_, err = stranger.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("stores"), Key: aws.String("globex/index.html"),
		Body: strings.NewReader("defaced")})
	require.ErrorContains(t, err, "InvalidAccessKeyId")
	forger, err := storefront.NewS3(ctx, srv.URL, "us-east-1",
		credentials.NewStaticCredentialsProvider(srv.Credentials.AccessKeyID, "guessed", ""))
	require.NoError(t, err)
	_, err = forger.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("stores"), Key: aws.String("globex/index.html"),
		Body: strings.NewReader("defaced")})
	require.ErrorContains(t, err, "SignatureDoesNotMatch")
	_, err = bucket.Inspect(ctx, "globex/index.html")
	require.ErrorIs(t, err, storefront.ErrNoUpload, "nothing was written")

	// A presigned URL dies with its time.
	late := devs3.Check(http.NotFoundHandler(), srv.Credentials, func() time.Time { return time.Now().Add(2 * time.Minute) })
	req, err := http.NewRequest(http.MethodPut, signed, strings.NewReader("x"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "image/png")
	req.Host, req.RequestURI = u.Host, u.RequestURI()
	rec := httptest.NewRecorder()
	late.ServeHTTP(rec, req)
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Contains(t, rec.Body.String(), "expired")
}
