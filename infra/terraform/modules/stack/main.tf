# One environment's whole deployment, wired from the other modules: each
# environment (environments/*) is this with its own sizes and its own
# state.

terraform {
  required_providers {
    aws = {
      source                = "hashicorp/aws"
      configuration_aliases = [aws.us_east_1]
    }
  }
}

variable "name" {
  description = "Prefix of every resource."
  type        = string
}

variable "cidr" {
  type = string
}

variable "nat_per_zone" {
  type = bool
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
}

variable "db_instance_class" {
  type = string
}

variable "db_max_connections" {
  type = number
}

variable "tenant_claims" {
  description = "BOXOFFICE_TENANT_CLAIMS: one tenant's claim transactions at once, about half the database's vCPUs."
  type        = number
}

variable "api" {
  type = object({ cpu = number, memory = number, min = number, max = number, db_max_conns = number })
}

variable "work" {
  type = object({ cpu = number, memory = number, min = number, max = number, db_max_conns = number })
}

module "network" {
  source       = "../network"
  name         = var.name
  cidr         = var.cidr
  zones        = 3
  nat_per_zone = var.nat_per_zone
}

module "database" {
  source                    = "../database"
  name                      = var.name
  vpc_id                    = module.network.vpc_id
  subnet_ids                = module.network.private_subnet_ids
  client_security_group_ids = [module.network.tasks_security_group_id]
  instance_class            = var.db_instance_class
  max_connections           = var.db_max_connections
  multi_az                  = true
}

module "queues" {
  source = "../queues"
  name   = "${var.name}-claims"
}

module "stores" {
  source        = "../stores"
  stores_bucket = "${var.name}-stores"
  tenants       = var.tenants
  # The console is served by the API: it uploads pictures to the bucket.
  console_origins = [module.service.api_url]
  providers = {
    aws           = aws
    aws.us_east_1 = aws.us_east_1
  }
}

module "service" {
  source                       = "../service"
  name                         = var.name
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
  api               = var.api
  work              = var.work
  extra_environment = {
    BOXOFFICE_STORE_AUTO_PUBLISH = "1"
    BOXOFFICE_TENANT_CLAIMS      = tostring(var.tenant_claims)
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
