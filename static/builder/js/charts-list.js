// The workflow list's small Runs charts, from the data the page carries (#run-charts).
import { mountCharts } from "./charts.js";

mountCharts();
