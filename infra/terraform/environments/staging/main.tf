# Staging: its own state (the seed's rule: one state per environment),
# everything from the modules. Apply with the commit to run:
#   terraform init && terraform apply -var image_tag=$(git rev-parse HEAD)
# then run the migrate task (output migrate_task_definition) before the
# services roll to the new task definitions — docs/operations.md "Deploying".

terraform {
  required_version = ">= 1.6"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.80"
    }
  }
  backend "s3" {
    bucket         = "boxoffice-terraform-state"
    key            = "staging/terraform.tfstate"
    region         = "us-east-1"
    dynamodb_table = "boxoffice-terraform-locks"
    encrypt        = true
  }
}

variable "region" {
  type    = string
  default = "us-east-1"
}

variable "image" {
  description = "The image repository (ECR), without tag."
  type        = string
}

variable "image_tag" {
  description = "The commit to deploy."
  type        = string
}

variable "api_certificate_arn" {
  type = string
}

variable "tenants" {
  description = "Tenants with a store: slug => { domain }."
  type        = map(object({ domain = string }))
  default     = {}
}

provider "aws" {
  region = var.region
  default_tags {
    tags = { app = "boxoffice", environment = "staging" }
  }
}

provider "aws" {
  alias  = "us_east_1"
  region = "us-east-1"
}

module "stack" {
  source              = "../../modules/stack"
  name                = "boxoffice-staging"
  cidr                = "10.41.0.0/16"
  nat_per_zone        = false
  image               = var.image
  image_tag           = var.image_tag
  api_certificate_arn = var.api_certificate_arn
  tenants             = var.tenants
  db_instance_class   = "db.t4g.large"
  tenant_claims       = 1 # half the instance's vCPUs
  db_max_connections  = 400
  api                 = { cpu = 1024, memory = 2048, min = 2, max = 6, db_max_conns = 20 }
  work                = { cpu = 1024, memory = 2048, min = 2, max = 4, db_max_conns = 20 }
  providers = {
    aws           = aws
    aws.us_east_1 = aws.us_east_1
  }
}

output "api_url" {
  value = module.stack.api_url
}

output "migrate_task_definition" {
  value = module.stack.migrate_task_definition
}

output "secret_names" {
  value = module.stack.secret_names
}

output "store_distributions" {
  value = module.stack.store_distributions
}
