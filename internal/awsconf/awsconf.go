// Package awsconf loads the AWS configuration the SQS and S3 clients share:
// the standard chain (region, credentials), or an emulator's address with
// dummy credentials in development and tests.
package awsconf

import (
	"context"
	"fmt"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Load returns the configuration for region (default us-east-1). creds,
// when not nil, are the credentials to sign with (those an in-process
// server checks). Otherwise a non-empty endpoint is an emulator's that
// checks none, and static dummy credentials stand in; the caller points its
// client at the endpoint.
func Load(ctx context.Context, endpoint, region string, creds aws.CredentialsProvider) (aws.Config, error) {
	opts := []func(*awsconfig.LoadOptions) error{}
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	switch {
	case creds != nil:
		opts = append(opts, awsconfig.WithCredentialsProvider(creds))
	case endpoint != "":
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("aws configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	return cfg, nil
}
