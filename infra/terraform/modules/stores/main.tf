# The white-label stores: one bucket, a prefix per tenant (what
# `boxoffice store publish` writes), and per tenant a CloudFront distribution
# with the tenant's domain and certificate, whose origin is that prefix.
# Tenants are data: adding one adds an entry to var.tenants, not code.
# Give the bucket's name to boxoffice as BOXOFFICE_STORE_BUCKET; the service module
# grants the tasks the publisher policy (they republish stores).

variable "stores_bucket" {
  description = "The bucket of every tenant's store (BOXOFFICE_STORE_BUCKET)."
  type        = string
  default     = "boxoffice-stores"
}

variable "tenants" {
  description = "The tenants with a store: slug => the domain the store is served on."
  type = map(object({
    domain = string
  }))
  default = {}
}

variable "console_origins" {
  description = "The origins of the console (the API's address) that upload logos and pictures straight to the bucket."
  type        = list(string)
  default     = []
}

variable "store_publisher_principals" {
  description = "Who may assume the store publisher role (the work processes' role ARNs)."
  type        = list(string)
  default     = []
}

# CloudFront takes certificates from us-east-1 only: the caller passes an
# aws provider for that region as aws.us_east_1.
terraform {
  required_providers {
    aws = {
      source                = "hashicorp/aws"
      configuration_aliases = [aws.us_east_1]
    }
  }
}

resource "aws_s3_bucket" "stores" {
  bucket = var.stores_bucket
}

resource "aws_s3_bucket_public_access_block" "stores" {
  bucket                  = aws_s3_bucket.stores.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

# The console PUTs logos and pictures with presigned URLs, from its own
# origin: the browser asks the bucket first.
resource "aws_s3_bucket_cors_configuration" "stores" {
  count  = length(var.console_origins) > 0 ? 1 : 0
  bucket = aws_s3_bucket.stores.id
  cors_rule {
    allowed_methods = ["PUT"]
    allowed_origins = var.console_origins
    allowed_headers = ["content-type"]
    max_age_seconds = 3000
  }
}

resource "aws_cloudfront_origin_access_control" "stores" {
  name                              = "${var.stores_bucket}-oac"
  origin_access_control_origin_type = "s3"
  signing_behavior                  = "always"
  signing_protocol                  = "sigv4"
}

# The cache follows the Cache-Control the publisher sets: the page a
# minute, the hashed assets a year.
data "aws_cloudfront_cache_policy" "optimized" {
  name = "Managed-CachingOptimized"
}

resource "aws_acm_certificate" "store" {
  for_each          = var.tenants
  provider          = aws.us_east_1
  domain_name       = each.value.domain
  validation_method = "DNS"

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_cloudfront_distribution" "store" {
  for_each            = var.tenants
  enabled             = true
  comment             = "store of ${each.key}"
  aliases             = [each.value.domain]
  default_root_object = "index.html"
  price_class         = "PriceClass_100"

  origin {
    origin_id                = "store"
    domain_name              = aws_s3_bucket.stores.bucket_regional_domain_name
    origin_path              = "/${each.key}"
    origin_access_control_id = aws_cloudfront_origin_access_control.stores.id
  }

  default_cache_behavior {
    target_origin_id       = "store"
    viewer_protocol_policy = "redirect-to-https"
    allowed_methods        = ["GET", "HEAD"]
    cached_methods         = ["GET", "HEAD"]
    cache_policy_id        = data.aws_cloudfront_cache_policy.optimized.id
    compress               = true
  }

  restrictions {
    geo_restriction {
      restriction_type = "none"
    }
  }

  viewer_certificate {
    acm_certificate_arn      = aws_acm_certificate.store[each.key].arn
    ssl_support_method       = "sni-only"
    minimum_protocol_version = "TLSv1.2_2021"
  }
}

# Each distribution reads its tenant's prefix only.
data "aws_iam_policy_document" "stores_read" {
  dynamic "statement" {
    for_each = var.tenants
    content {
      sid       = "read-${statement.key}"
      actions   = ["s3:GetObject"]
      resources = ["${aws_s3_bucket.stores.arn}/${statement.key}/*"]
      principals {
        type        = "Service"
        identifiers = ["cloudfront.amazonaws.com"]
      }
      condition {
        test     = "StringEquals"
        variable = "AWS:SourceArn"
        values   = [aws_cloudfront_distribution.store[statement.key].arn]
      }
    }
  }
}

resource "aws_s3_bucket_policy" "stores" {
  count  = length(var.tenants) > 0 ? 1 : 0
  bucket = aws_s3_bucket.stores.id
  policy = data.aws_iam_policy_document.stores_read.json
}

# The publisher: what `boxoffice store publish` and the republish job need.
data "aws_iam_policy_document" "store_publisher_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "AWS"
      identifiers = length(var.store_publisher_principals) > 0 ? var.store_publisher_principals : ["arn:aws:iam::${data.aws_caller_identity.current.account_id}:root"]
    }
  }
}

data "aws_caller_identity" "current" {}

resource "aws_iam_role" "store_publisher" {
  name               = "${var.stores_bucket}-publisher"
  assume_role_policy = data.aws_iam_policy_document.store_publisher_assume.json
}

resource "aws_iam_role_policy" "store_publisher" {
  name = "publish-stores"
  role = aws_iam_role.store_publisher.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = ["s3:PutObject", "s3:GetObject"]
      Resource = "${aws_s3_bucket.stores.arn}/*"
    }]
  })
}

output "store_distributions" {
  description = "Per tenant: the CloudFront domain to point the store's domain at (CNAME/ALIAS)."
  value       = { for slug, d in aws_cloudfront_distribution.store : slug => d.domain_name }
}

output "store_certificate_validation" {
  description = "Per tenant: the DNS records that validate its certificate."
  value       = { for slug, c in aws_acm_certificate.store : slug => c.domain_validation_options }
}

output "store_publisher_role_arn" {
  value = aws_iam_role.store_publisher.arn
}

output "bucket_arn" {
  value = aws_s3_bucket.stores.arn
}

output "bucket" {
  value = aws_s3_bucket.stores.id
}
