# PostgreSQL: RDS Multi-AZ, a synchronous standby in another zone that RDS
# promotes when the primary fails (the writer endpoint's DNS moves; the
# old primary is fenced by RDS and rebuilt as the new standby). Backups
# with point-in-time recovery; the master password lives in Secrets
# Manager (RDS rotates it) and reaches the tasks as PGPASSWORD, never in
# Terraform state or DATABASE_URL.

variable "name" {
  type = string
}

variable "vpc_id" {
  type = string
}

variable "subnet_ids" {
  description = "Private subnets, one per zone."
  type        = list(string)
}

variable "client_security_group_ids" {
  description = "Who may connect: the tasks' security group."
  type        = list(string)
}

variable "instance_class" {
  description = "Sized from the benchmarks: see docs/operations.md \"Sizing\"."
  type        = string
  default     = "db.r6g.xlarge"
}

variable "allocated_storage_gb" {
  type    = number
  default = 200
}

variable "max_connections" {
  description = "API processes × BOXOFFICE_DB_MAX_CONNS + workers × theirs + room for operators and the migrate task."
  type        = number
  default     = 800
}

variable "backup_retention_days" {
  type    = number
  default = 14
}

variable "multi_az" {
  type    = bool
  default = true
}

variable "deletion_protection" {
  type    = bool
  default = true
}

resource "aws_db_subnet_group" "main" {
  name       = var.name
  subnet_ids = var.subnet_ids
}

resource "aws_security_group" "db" {
  name   = "${var.name}-db"
  vpc_id = var.vpc_id
  ingress {
    from_port       = 5432
    to_port         = 5432
    protocol        = "tcp"
    security_groups = var.client_security_group_ids
  }
}

resource "aws_db_parameter_group" "main" {
  name   = "${var.name}-pg15"
  family = "postgres15"

  # A confirmed order is a committed one: commits wait for the WAL flush
  # (and, Multi-AZ, for the standby).
  parameter {
    name  = "synchronous_commit"
    value = "on"
  }
  parameter {
    name         = "max_connections"
    value        = var.max_connections
    apply_method = "pending-reboot"
  }
  # A transaction left open (a crashed client) must not hold the inventory
  # row: the claim transactions are milliseconds long.
  parameter {
    name  = "idle_in_transaction_session_timeout"
    value = "60000"
  }
  parameter {
    name  = "rds.force_ssl"
    value = "1"
  }
  # The per-statement timings the burst benchmark reads, in production too.
  parameter {
    name         = "shared_preload_libraries"
    value        = "pg_stat_statements"
    apply_method = "pending-reboot"
  }
  parameter {
    name  = "track_io_timing"
    value = "1"
  }
  parameter {
    name  = "log_min_duration_statement"
    value = "250"
  }
  parameter {
    name  = "log_lock_waits"
    value = "1"
  }
}

resource "aws_db_instance" "main" {
  identifier     = var.name
  engine         = "postgres"
  engine_version = "15"
  instance_class = var.instance_class
  multi_az       = var.multi_az

  db_name                     = "boxoffice"
  username                    = "boxoffice"
  manage_master_user_password = true

  allocated_storage     = var.allocated_storage_gb
  max_allocated_storage = var.allocated_storage_gb * 4
  storage_type          = "gp3"
  storage_encrypted     = true

  db_subnet_group_name   = aws_db_subnet_group.main.name
  vpc_security_group_ids = [aws_security_group.db.id]
  parameter_group_name   = aws_db_parameter_group.main.name
  publicly_accessible    = false

  backup_retention_period   = var.backup_retention_days
  backup_window             = "03:00-04:00"
  maintenance_window        = "mon:04:30-mon:05:30"
  copy_tags_to_snapshot     = true
  deletion_protection       = var.deletion_protection
  skip_final_snapshot       = false
  final_snapshot_identifier = "${var.name}-final"

  performance_insights_enabled = true
  monitoring_interval          = 15
  monitoring_role_arn          = aws_iam_role.monitoring.arn
  auto_minor_version_upgrade   = true
  apply_immediately            = false
}

resource "aws_iam_role" "monitoring" {
  name = "${var.name}-rds-monitoring"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Action    = "sts:AssumeRole"
      Principal = { Service = "monitoring.rds.amazonaws.com" }
    }]
  })
}

resource "aws_iam_role_policy_attachment" "monitoring" {
  role       = aws_iam_role.monitoring.name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AmazonRDSEnhancedMonitoringRole"
}

output "database_url" {
  description = "DATABASE_URL without the password (PGPASSWORD carries it): the writer endpoint, TLS verified, read-write sessions only."
  value = format("postgres://%s@%s:%d/%s?sslmode=require&target_session_attrs=read-write",
  aws_db_instance.main.username, aws_db_instance.main.address, aws_db_instance.main.port, aws_db_instance.main.db_name)
}

output "password_secret_arn" {
  description = "The master user secret (JSON with username and password), managed and rotated by RDS."
  value       = aws_db_instance.main.master_user_secret[0].secret_arn
}
