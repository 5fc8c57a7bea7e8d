"""Parts of the HTML report (output/html_report.py): the numbers its charts draw, and the charts."""
