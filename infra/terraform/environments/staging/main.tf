# Staging: its own state (the seed's rule: one state per environment),
# everything from the modules. Apply with the commit to run:
#   terraform init && terraform apply -var image_tag=$(git rev-parse HEAD)
# then run the migrate task (output migrate_task_definition) before the
# services roll to the new task definitions — README "Deploying".

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

locals {
  name = "boxoffice-staging"
}

module "network" {
  source       = "../../modules/network"
  name         = local.name
  cidr         = "10.41.0.0/16"
  zones        = 3
  nat_per_zone = false
}

module "database" {
  source                    = "../../modules/database"
  name                      = local.name
  vpc_id                    = module.network.vpc_id
  subnet_ids                = module.network.private_subnet_ids
  client_security_group_ids = [module.network.tasks_security_group_id]
  instance_class            = "db.t4g.large"
  max_connections           = 400
  multi_az                  = true # rehearse failovers here first
}

module "queues" {
  source = "../../modules/queues"
  name   = "${local.name}-claims"
}

module "stores" {
  source        = "../../modules/stores"
  stores_bucket = "${local.name}-stores"
  tenants       = var.tenants
  providers = {
    aws           = aws
    aws.us_east_1 = aws.us_east_1
  }
}

module "service" {
  source                       = "../../modules/service"
  name                         = local.name
  vpc_id                       = module.network.vpc_id
  public_subnet_ids            = module.network.public_subnet_ids
  private_subnet_ids           = module.network.private_subnet_ids
  tasks_security_group_id      = module.network.tasks_security_group_id
  image                        = var.image
  image_tag                    = var.image_tag
  certificate_arn              = var.api_certificate_arn
  database_url                 = module.database.database_url
  database_password_secret_arn = module.database.password_secret_arn
  queue_backend                = "sqs"
  sqs = {
    queue_url        = module.queues.sqs_queue_url
    dlq_url          = module.queues.sqs_dlq_url
    events_queue_url = module.queues.sqs_events_queue_url
    claims_queue     = module.queues.claims_queue_name
    arns             = module.queues.queue_arns
  }
  stores_bucket     = module.stores.bucket
  stores_bucket_arn = module.stores.bucket_arn
  api               = { cpu = 1024, memory = 2048, min = 2, max = 6, db_max_conns = 20 }
  work              = { cpu = 1024, memory = 2048, min = 2, max = 4, db_max_conns = 20 }
  extra_environment = {
    STORE_AUTO_PUBLISH = "1"
  }
}

output "api_url" {
  value = module.service.api_url
}

output "migrate_task_definition" {
  value = module.service.migrate_task_definition
}

output "secret_names" {
  value = module.service.secret_names
}

output "store_distributions" {
  value = module.stores.store_distributions
}
