"""Alluxio's daily journal backup (issue 22 item 13): Alluxio 2.9's own schedule
(alluxio.master.daily.backup.*) writing into the root under-store, which is then the inventory's
backup bucket, so the backups are in S3; the settings from the inventory with defaults; every bad
input refused with its file:line."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from forge.commands.main import main
from forge.components.alluxio import ROOT_UFS, Alluxio
from tests.helpers import copy_repo_inputs, edit, generated, inventory_file, inventory_text, line_of, model, only_problem, problems_of

BACKUP_LINE = ' backup: {bucket: alluxio-backups, time: "05:00", retained: 7}}\n'
BACKUP_AT = "components.alluxio.journal.backup"


def properties(cluster: str) -> dict:
    return generated(f"overlays/{cluster}/alluxio/values.yaml")["properties"]


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_the_fleets_back_the_journal_up_daily_into_their_backup_bucket(cluster):
    p = properties(cluster)
    assert p["alluxio.master.mount.table.root.ufs"] == f"s3://exa-alluxio-backups-{cluster}/"
    assert p["alluxio.master.mount.table.root.readonly"] == "true"  # no client writes there
    assert p["alluxio.master.daily.backup.enabled"] == "true"
    assert p["alluxio.master.daily.backup.time"] == "05:00"
    assert p["alluxio.master.daily.backup.files.retained"] == "7"
    assert p["alluxio.master.backup.directory"] == "/alluxio-journal-backups"
    # The backup bucket is never a mount: Alluxio refuses overlapping under-store paths.
    assert f"exa-alluxio-backups-{cluster}" not in str(generated(f"overlays/{cluster}/alluxio/job-alluxio-mount-buckets.yaml"))


def test_without_a_backup_the_root_stays_the_local_folder_and_nothing_is_scheduled():
    text = edit(inventory_text("h200"), "size_gib: 50," + BACKUP_LINE, "size_gib: 50}\n")
    p = Alluxio().values(model("h200", text))["properties"]
    assert p["alluxio.master.mount.table.root.ufs"] == ROOT_UFS
    assert not any(k.startswith(("alluxio.master.daily.backup", "alluxio.master.backup")) for k in p)


def test_defaults_for_time_directory_and_retention():
    text = edit(inventory_text("a100"), BACKUP_LINE, " backup: {bucket: alluxio-backups}}\n")
    p = Alluxio().values(model("a100", text))["properties"]
    assert (p["alluxio.master.daily.backup.time"], p["alluxio.master.daily.backup.files.retained"],
            p["alluxio.master.backup.directory"]) == ("05:00", "7", "/alluxio-journal-backups")
    text = edit(inventory_text("a100"), BACKUP_LINE,
                ' backup: {bucket: alluxio-backups, time: "23:30", retained: 30, directory: /alluxio/backups}}\n')
    p = Alluxio().values(model("a100", text))["properties"]
    assert (p["alluxio.master.daily.backup.time"], p["alluxio.master.daily.backup.files.retained"],
            p["alluxio.master.backup.directory"]) == ("23:30", "30", "/alluxio/backups")


@pytest.mark.parametrize("entry, field, needle", [
    ('{bucket: backupz}', "bucket", "'backupz' is not a bucket of cluster.s3.buckets (have: alluxio-backups, checkpoints, "
                                    "datasets, flyte, loki)"),
    ('{bucket: checkpoints}', "bucket", "bucket 'checkpoints' is mounted by Alluxio (components.alluxio.buckets): the backups "
                                        "need a bucket of their own, the root under-store, which no mount may overlap; "
                                        "add one to cluster.s3.buckets (not mounted now: alluxio-backups, loki)"),
    ('{bucket: alluxio-backups, time: "5am"}', "time", "backup time '5am' is not a UTC time of day as HH:MM on a 24-hour "
                                                       'clock (00:00-23:59), e.g. "05:00"'),
    ('{bucket: alluxio-backups, time: "24:00"}', "time", "backup time '24:00' is not a UTC time of day"),
    ('{bucket: alluxio-backups, time: 5}', "time", "string"),
    ('{bucket: alluxio-backups, retained: 0}', "retained", "greater than or equal to 1"),
    ('{bucket: alluxio-backups, directory: alluxio-backups}', "directory", "backup directory 'alluxio-backups' is not an "
                                                                           "absolute path in the backup bucket"),
    ('{bucket: alluxio-backups, directory: /a/../b}', "directory", "backup directory '/a/../b' is not an absolute path"),
    ('{bucket: alluxio-backups, dir: /x}', "dir", "unknown key 'dir' (expected one of: bucket, directory, time, retained, "
                                                  "restore_from)"),
    ('{bucket: alluxio-backups, restore_from: s3://x/backup.gz}', "restore_from", "'s3://x/backup.gz' does not match the expected form ^alluxio-backup-"),
])
def test_bad_backup_settings_are_refused_at_their_line(entry, field, needle):
    text = edit(inventory_text("h200"), BACKUP_LINE, f" backup: {entry}}}\n")
    p = only_problem(problems_of("h200", text), f"{BACKUP_AT}.{field}")
    assert needle in p.message, p.message
    assert (p.file, p.line) == (inventory_file("h200"), line_of(text, "backup: {"))


def test_a_mounted_backup_bucket_stops_generate_with_exit_2(tmp_path):
    root = copy_repo_inputs(tmp_path / "repo")
    path = root / inventory_file("h200")
    path.write_text(edit(path.read_text(), "backup: {bucket: alluxio-backups,", "backup: {bucket: flyte,"))
    line = line_of(path.read_text(), "backup: {bucket: flyte,")
    result = CliRunner().invoke(main, ["generate", "--root", str(root)])
    assert result.exit_code == 2, result.output
    assert (f"clusters/h200/inventory.yaml:{line}: {BACKUP_AT}.bucket: bucket 'flyte' is mounted by Alluxio") in result.output
    assert "Traceback" not in result.output
    assert not (root / "overlays").exists()


def test_a_restore_names_a_backup_file_of_the_backup_directory():
    text = edit(inventory_text("h200"), BACKUP_LINE, " backup: {bucket: alluxio-backups, "
                "restore_from: alluxio-backup-2026-12-01-1764565200000.gz}}\n")
    p = Alluxio().values(model("h200", text))["properties"]
    assert p["alluxio.master.journal.init.from.backup"] == (
        "s3://exa-alluxio-backups-h200/alluxio-journal-backups/alluxio-backup-2026-12-01-1764565200000.gz")
    assert "alluxio.master.journal.init.from.backup" not in properties("h200")  # only while restoring
