//! Aligned tables: what `leases`, `parked` and `status` print for people.

use std::io::Write;

/// A table with a header, columns two spaces apart and aligned, no trailing space; nothing for
/// no rows.
pub fn write_columns(
    out: &mut dyn Write,
    columns: &[(&str, bool)],
    rows: &[Vec<String>],
) -> std::io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, (title, _))| {
            rows.iter()
                .map(|row| row[i].chars().count())
                .chain([title.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let titles: Vec<String> = columns
        .iter()
        .map(|(title, _)| (*title).to_owned())
        .collect();
    for row in std::iter::once(&titles).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(columns.iter().zip(&widths))
            .map(|(cell, ((_, right), width))| match right {
                true => format!("{cell:>width$}"),
                false => format!("{cell:<width$}"),
            })
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    Ok(())
}
