// Package devs3 is the S3 server `boxoffice dev` and the tests run in
// process: gofakes3's in-memory S3 behind a check of AWS Signature Version
// 4, with credentials minted at start. Only the process's own clients, and
// whoever holds a presigned URL one of them made, can read or write it, as
// with the real service: a tenant handed a presigned URL for one key cannot
// write another tenant's files with it, or without one.
package devs3

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Server is a running in-process S3.
type Server struct {
	// URL is its endpoint, http://127.0.0.1:port.
	URL string
	// Credentials are the only ones it accepts.
	Credentials aws.Credentials
	srv         *http.Server
}

// Start runs a server on a loopback port with fresh credentials.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("s3 server: %w", err)
	}
	creds := aws.Credentials{AccessKeyID: "DEV" + strings.ToUpper(random(8)), SecretAccessKey: random(20), Source: "devs3"}
	s := &Server{URL: "http://" + ln.Addr().String(), Credentials: creds}
	s.srv = &http.Server{Handler: Check(gofakes3.New(s3mem.New()).Server(), creds, time.Now),
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Provider gives the server's credentials to an AWS client.
func (s *Server) Provider() aws.CredentialsProvider {
	return credentials.StaticCredentialsProvider{Value: s.Credentials}
}

// Close stops the server.
func (s *Server) Close() { _ = s.srv.Close() }

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// maxSkew is how far a signed request's time may be from the server's, as
// S3 allows.
const maxSkew = 15 * time.Minute

// Check serves next only requests signed with creds, in a header (the SDK's
// calls) or in the query (presigned URLs, until they expire); others get
// S3's 403 error document.
func Check(next http.Handler, creds aws.Credentials, now func() time.Time) http.Handler {
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }) // as S3 signs
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cors(w, r) {
			return
		}
		var err error
		if r.URL.Query().Has("X-Amz-Signature") {
			err = checkPresigned(r, signer, creds, now())
		} else {
			err = checkHeader(r, signer, creds, now())
		}
		if d := (denied{}); errors.As(err, &d) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`,
				d.code, d.message)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cors answers browsers as a bucket whose CORS rule lets any origin PUT
// and GET (the console uploads pictures with presigned URLs, whose
// signature is the permission): it answers a preflight itself, and
// reports whether it did; other requests from a page get the origin
// allowed on their answer.
func cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method != http.MethodOptions {
		return false
	}
	switch r.Header.Get("Access-Control-Request-Method") {
	case http.MethodPut, http.MethodGet:
		h.Set("Access-Control-Allow-Methods", "GET, PUT")
		h.Set("Access-Control-Allow-Headers", "content-type")
		h.Set("Access-Control-Max-Age", "3000")
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusForbidden)
	}
	return true
}

type denied struct{ code, message string }

func (d denied) Error() string { return d.code + ": " + d.message }

func deny(code, format string, args ...any) error {
	return denied{code: code, message: fmt.Sprintf(format, args...)}
}

// scope reads a credential (AKID/date/region/s3/aws4_request) and returns
// its region, refusing another access key.
func scope(credential string, creds aws.Credentials) (string, error) {
	parts := strings.Split(credential, "/")
	if len(parts) != 5 || parts[3] != "s3" || parts[4] != "aws4_request" {
		return "", deny("AuthorizationHeaderMalformed", "malformed credential")
	}
	if parts[0] != creds.AccessKeyID {
		return "", deny("InvalidAccessKeyId", "the access key is not known here")
	}
	return parts[2], nil
}

// signable copies what a signature covers of r: its method, URL as sent,
// and the headers it names.
func signable(r *http.Request, signedHeaders string, dropQuery string) (*http.Request, error) {
	u, err := url.Parse("http://" + r.Host + r.RequestURI)
	if err != nil {
		return nil, deny("AccessDenied", "bad request URI")
	}
	if dropQuery != "" {
		q := u.Query()
		q.Del(dropQuery)
		u.RawQuery = q.Encode()
	}
	c, err := http.NewRequest(r.Method, u.String(), nil) //nolint:gosec,noctx // G704: a copy to sign, never sent
	if err != nil {
		return nil, deny("AccessDenied", "bad request")
	}
	c.Host = r.Host
	for h := range strings.SplitSeq(signedHeaders, ";") {
		switch h {
		case "host":
		case "content-length":
			c.ContentLength = r.ContentLength
		default:
			if v, ok := r.Header[http.CanonicalHeaderKey(h)]; ok {
				c.Header[http.CanonicalHeaderKey(h)] = v
			}
		}
	}
	return c, nil
}

func checkPresigned(r *http.Request, signer *v4.Signer, creds aws.Credentials, now time.Time) error {
	q := r.URL.Query()
	if q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" {
		return deny("AuthorizationQueryParametersError", "want X-Amz-Algorithm AWS4-HMAC-SHA256")
	}
	region, err := scope(q.Get("X-Amz-Credential"), creds)
	if err != nil {
		return err
	}
	signedAt, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return deny("AuthorizationQueryParametersError", "bad X-Amz-Date")
	}
	expires, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	if err != nil || expires < 1 || expires > 7*24*3600 {
		return deny("AuthorizationQueryParametersError", "bad X-Amz-Expires")
	}
	if now.After(signedAt.Add(time.Duration(expires)*time.Second)) || signedAt.After(now.Add(maxSkew)) {
		return deny("AccessDenied", "Request has expired")
	}
	c, err := signable(r, q.Get("X-Amz-SignedHeaders"), "X-Amz-Signature")
	if err != nil {
		return err
	}
	signed, _, err := signer.PresignHTTP(r.Context(), creds, c, "UNSIGNED-PAYLOAD", "s3", region, signedAt)
	if err != nil {
		return deny("AccessDenied", "cannot check the signature")
	}
	u, err := url.Parse(signed)
	if err != nil || !hmac.Equal([]byte(u.Query().Get("X-Amz-Signature")), []byte(q.Get("X-Amz-Signature"))) {
		return deny("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided")
	}
	return nil
}

func checkHeader(r *http.Request, signer *v4.Signer, creds aws.Credentials, now time.Time) error {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return deny("AccessDenied", "Access Denied")
	}
	fields := map[string]string{}
	for part := range strings.SplitSeq(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	region, err := scope(fields["Credential"], creds)
	if err != nil {
		return err
	}
	signedAt, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return deny("AccessDenied", "bad X-Amz-Date")
	}
	if d := now.Sub(signedAt); d > maxSkew || d < -maxSkew {
		return deny("RequestTimeTooSkewed", "the request time is too far from the server's")
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	switch {
	case payload == "UNSIGNED-PAYLOAD":
	case len(payload) == sha256.Size*2:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return deny("IncompleteBody", "cannot read the body")
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != payload {
			return deny("XAmzContentSHA256Mismatch", "the body is not the one signed")
		}
	default:
		return deny("AccessDenied", "unsupported X-Amz-Content-Sha256")
	}
	c, err := signable(r, fields["SignedHeaders"], "")
	if err != nil {
		return err
	}
	if err := signer.SignHTTP(r.Context(), creds, c, payload, "s3", region, signedAt); err != nil {
		return deny("AccessDenied", "cannot check the signature")
	}
	_, want, _ := strings.Cut(c.Header.Get("Authorization"), "Signature=")
	if !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return deny("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided")
	}
	return nil
}
