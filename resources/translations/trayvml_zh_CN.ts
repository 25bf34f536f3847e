<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN" sourcelanguage="en">
<context>
    <name>AlertDetails</name>
    <message>
        <source>PID {pid} of another user (no permission to see its name)</source>
        <translation>PID {pid}，属于其他用户（无权限查看其名称）</translation>
    </message>
    <message>
        <source>container {id}</source>
        <translation>容器 {id}</translation>
    </message>
    <message>
        <source>another container or namespace</source>
        <translation>其他容器或命名空间</translation>
    </message>
    <message>
        <source>PID {pid}, not visible from here ({where})</source>
        <translation>PID {pid}，从这里不可见（{where}）</translation>
    </message>
    <message>
        <source>user unknown</source>
        <translation>用户未知</translation>
    </message>
    <message>
        <source>notebook {path}</source>
        <translation>笔记本 {path}</translation>
    </message>
    <message>
        <source>{where}: {what} ({user}, PID {pid})</source>
        <translation>{where}：{what}（{user}，PID {pid}）</translation>
    </message>
    <message>
        <source>{what} ({user}, PID {pid})</source>
        <translation>{what}（{user}，PID {pid}）</translation>
    </message>
    <message>
        <source>; </source>
        <translation>；</translation>
    </message>
    <message>
        <source>{processes}; and {more} more</source>
        <translation>{processes}；另有 {more} 个</translation>
    </message>
    <message>
        <source>{lead}: {processes}</source>
        <translation>{lead}：{processes}</translation>
    </message>
    <message>
        <source>Processes</source>
        <translation>进程</translation>
    </message>
    <message>
        <source>Its name and PCI bus id are unknown: it was lost before trayvml could read them.</source>
        <translation>其名称和 PCI 总线 ID 未知：在 trayvml 读取它们之前 GPU 就已丢失。</translation>
    </message>
    <message>
        <source>{name} at PCI {bus}.</source>
        <translation>{name}，位于 PCI {bus}。</translation>
    </message>
    <message>
        <source>{name} (PCI bus id unknown).</source>
        <translation>{name}（PCI 总线 ID 未知）。</translation>
    </message>
    <message>
        <source>SM clock {clock} MHz of its {max} MHz maximum ({percent} %).</source>
        <translation>SM 时钟 {clock} MHz，最高 {max} MHz（{percent} %）。</translation>
    </message>
    <message>
        <source>SM clock {clock} MHz.</source>
        <translation>SM 时钟 {clock} MHz。</translation>
    </message>
    <message>
        <source>Why: {reasons}.</source>
        <translation>原因：{reasons}。</translation>
    </message>
    <message>
        <source>, </source>
        <translation>、</translation>
    </message>
    <message>
        <source>At {now} °C; this GPU slows down at {slowdown} °C and shuts down at {shutdown} °C.</source>
        <translation>当前 {now} °C；此 GPU 在 {slowdown} °C 降速，在 {shutdown} °C 关机。</translation>
    </message>
    <message>
        <source>At {now} °C; this GPU slows down at {slowdown} °C.</source>
        <translation>当前 {now} °C；此 GPU 在 {slowdown} °C 降速。</translation>
    </message>
    <message>
        <source>At {now} °C; this GPU shuts down at {shutdown} °C.</source>
        <translation>当前 {now} °C；此 GPU 在 {shutdown} °C 关机。</translation>
    </message>
    <message>
        <source>At {now} °C; this GPU does not tell its limits.</source>
        <translation>当前 {now} °C；此 GPU 未报告其温度上限。</translation>
    </message>
    <message>
        <source>Last seen at {time}: {values}.</source>
        <translation>最后一次读到是在 {time}：{values}。</translation>
    </message>
    <message>
        <source>It was running</source>
        <translation>当时运行的进程</translation>
    </message>
    <message>
        <source>trayvml never read a value from it.</source>
        <translation>trayvml 从未从它读到任何数值。</translation>
    </message>
</context>
<context>
    <name>AlertsPage</name>
    <message>
        <source>Time</source>
        <translation>时间</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Severity</source>
        <translation>级别</translation>
    </message>
    <message>
        <source>What happened</source>
        <translation>事件</translation>
    </message>
    <message>
        <source>Action</source>
        <translation>操作</translation>
    </message>
    <message>
        <source>info</source>
        <translation>信息</translation>
    </message>
    <message>
        <source>warning</source>
        <translation>警告</translation>
    </message>
    <message>
        <source>critical</source>
        <translation>严重</translation>
    </message>
    <message>
        <source>Alerts</source>
        <translation>告警</translation>
    </message>
    <message>
        <source>No alerts since trayvml started; the rules are in Settings.</source>
        <translation>trayvml 启动以来没有告警；告警规则在“设置”中。</translation>
    </message>
    <message>
        <source>resolved</source>
        <translation>已恢复</translation>
    </message>
    <message>
        <source>all</source>
        <translation>全部</translation>
    </message>
    <message>
        <source>Shut down kernel…</source>
        <translation>关闭 Jupyter 内核…</translation>
    </message>
</context>
<context>
    <name>App</name>
    <message>
        <source>no graphical desktop was found (no DISPLAY or WAYLAND_DISPLAY that answers), and the tray app needs one. In a terminal or over SSH, use `trayvml snapshot` or `trayvml log --csv FILE`.</source>
        <translation>未找到图形桌面（没有可响应的 DISPLAY 或 WAYLAND_DISPLAY），托盘程序需要图形桌面。在终端或 SSH 中，请使用 `trayvml snapshot` 或 `trayvml log --csv FILE`。</translation>
    </message>
    <message>
        <source>trayvml speaks the new language from its next start.</source>
        <translation>trayvml 将在下次启动时使用新的语言。</translation>
    </message>
    <message>
        <source>trayvml keeps its history on disk from its next start.</source>
        <translation>trayvml 将从下次启动起在磁盘上保存历史记录。</translation>
    </message>
    <message>
        <source>trayvml stops keeping its history on disk at its next start.</source>
        <translation>trayvml 将从下次启动起不再在磁盘上保存历史记录。</translation>
    </message>
    <message>
        <source>Serving metrics: {error}</source>
        <translation>指标服务出错：{error}</translation>
    </message>
    <message>
        <source>Could not change {location}: {error}</source>
        <translation>无法修改 {location}：{error}</translation>
    </message>
    <message>
        <source>trayvml: no system tray found; showing a summary window instead (on GNOME, the AppIndicator extension adds a tray).</source>
        <translation>trayvml：未找到系统托盘，改为显示摘要窗口（在 GNOME 上，AppIndicator 扩展可提供托盘）。</translation>
    </message>
    <message>
        <source>trayvml is already running: its window was brought forward.</source>
        <translation>trayvml 已在运行：已将其窗口调到前台。</translation>
    </message>
    <message>
        <source>Another trayvml is starting for this session and did not answer.</source>
        <translation>本会话中另一个 trayvml 正在启动且未应答。</translation>
    </message>
</context>
<context>
    <name>DetailsPage</name>
    <message>
        <source>Current readings</source>
        <translation>当前读数</translation>
    </message>
    <message>
        <source>NVLink per link</source>
        <translation>各 NVLink 链路</translation>
    </message>
    <message>
        <source>Value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>As of</source>
        <translation>读取于</translation>
    </message>
    <message>
        <source>Reading</source>
        <translation>读数</translation>
    </message>
    <message>
        <source>System</source>
        <translation>系统</translation>
    </message>
    <message>
        <source>Driver</source>
        <translation>驱动</translation>
    </message>
    <message>
        <source>CUDA driver API</source>
        <translation>CUDA 驱动 API</translation>
    </message>
    <message>
        <source>GPU {index}</source>
        <translation>GPU {index}</translation>
    </message>
    <message>
        <source>not available</source>
        <translation>不可用</translation>
    </message>
    <message>
        <source>being read…</source>
        <translation>正在读取…</translation>
    </message>
    <message>
        <source>{age} s ago</source>
        <translation>{age} 秒前</translation>
    </message>
    <message>
        <source>{count} links</source>
        <translation>{count} 条链路</translation>
    </message>
    <message>
        <source>no links read</source>
        <translation>未读取到链路</translation>
    </message>
    <message>
        <source>Link {link}</source>
        <translation>链路 {link}</translation>
    </message>
</context>
<context>
    <name>Gaps</name>
    <message>
        <source>not recording</source>
        <translation>未记录</translation>
    </message>
    <message>
        <source>Show a past range</source>
        <translation>显示过去的时间段</translation>
    </message>
    <message>
        <source>From</source>
        <translation>从</translation>
    </message>
    <message>
        <source>To</source>
        <translation>到</translation>
    </message>
</context>
<context>
    <name>GpuText</name>
    <message>
        <source>{index} — lost</source>
        <translation>{index} — 已丢失</translation>
    </message>
    <message>
        <source>{index} — lost before its name could be read: it has fallen off the bus</source>
        <translation>{index} — 在读取名称之前就已丢失：GPU 已从总线上掉线</translation>
    </message>
    <message>
        <source>{gpu} — lost</source>
        <translation>{gpu} — 已丢失</translation>
    </message>
    <message>
        <source>{gpu} — asleep</source>
        <translation>{gpu} — 休眠中</translation>
    </message>
    <message>
        <source>{gpu} — idle</source>
        <translation>{gpu} — 空闲</translation>
    </message>
    <message>
        <source>{gpu} — lost: it has fallen off the bus</source>
        <translation>{gpu} — 已丢失：GPU 已从总线上掉线</translation>
    </message>
    <message>
        <source>{gpu} — asleep (runtime-suspended): not queried, so it stays asleep</source>
        <translation>{gpu} — 休眠中（运行时挂起）：不查询，以免将其唤醒</translation>
    </message>
    <message>
        <source>{gpu} — idle: read now and then, so that it can go to sleep</source>
        <translation>{gpu} — 空闲：仅偶尔读取，以便其进入休眠</translation>
    </message>
    <message>
        <source>{gpu} — no new values</source>
        <translation>{gpu} — 无新数值</translation>
    </message>
    <message>
        <source>{gpu} — no new values for {age} s</source>
        <translation>{gpu} — 已 {age} 秒无新数值</translation>
    </message>
    <message>
        <source>{job} ({age} s ago)</source>
        <translation>{job}（{age} 秒前）</translation>
    </message>
    <message>
        <source>{job} (as of {age} s ago)</source>
        <translation>{job}（截至 {age} 秒前）</translation>
    </message>
    <message>
        <source>Host CPU {cpu} · RAM {ram}</source>
        <translation>主机 CPU {cpu} · 内存 {ram}</translation>
    </message>
    <message>
        <source>simulated GPUs ({scenario})</source>
        <translation>模拟 GPU（{scenario}）</translation>
    </message>
    <message>
        <source>GPU {index} on {host}</source>
        <translation>{host} 上的 GPU {index}</translation>
    </message>
    <message>
        <source>GPU {index}</source>
        <translation>GPU {index}</translation>
    </message>
    <message>
        <source>{host} is unreachable: the icon shows no number</source>
        <translation>{host} 无法连接：图标不显示数值</translation>
    </message>
    <message>
        <source>{gpu} is lost: the icon shows no number</source>
        <translation>{gpu} 已丢失：图标不显示数值</translation>
    </message>
    <message>
        <source>{value}: {metric}, {gpu} (critical)</source>
        <translation>{value}：{metric}，{gpu}（严重）</translation>
    </message>
    <message>
        <source>{value}: {metric}, {gpu} (warning)</source>
        <translation>{value}：{metric}，{gpu}（警告）</translation>
    </message>
    <message>
        <source>{value}: {metric}, {gpu} (the highest)</source>
        <translation>{value}：{metric}，{gpu}（最高）</translation>
    </message>
    <message>
        <source>trayvml — starting…</source>
        <translation>trayvml — 正在启动…</translation>
    </message>
    <message>
        <source>(name unknown)</source>
        <translation>（名称未知）</translation>
    </message>
</context>
<context>
    <name>GraphWindow</name>
    <message>
        <source>1 min</source>
        <translation>1 分钟</translation>
    </message>
    <message>
        <source>5 min</source>
        <translation>5 分钟</translation>
    </message>
    <message>
        <source>15 min</source>
        <translation>15 分钟</translation>
    </message>
    <message>
        <source>1 h</source>
        <translation>1 小时</translation>
    </message>
    <message>
        <source>6 h</source>
        <translation>6 小时</translation>
    </message>
    <message>
        <source>12 h</source>
        <translation>12 小时</translation>
    </message>
    <message>
        <source>24 h</source>
        <translation>24 小时</translation>
    </message>
    <message>
        <source>7 d</source>
        <translation>7 天</translation>
    </message>
    <message>
        <source>Start with simulated GPUs (made-up readings)</source>
        <translation>使用模拟 GPU 启动（虚构读数）</translation>
    </message>
    <message>
        <source>Made-up GPUs to look around trayvml without a driver: the title and status bar say SIMULATED while they are shown</source>
        <translation>无驱动时用虚构的 GPU 体验 trayvml：显示期间标题栏和状态栏会标明“模拟”</translation>
    </message>
    <message>
        <source>Throttle strip: {legend}</source>
        <translation>降频条：{legend}</translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Per GPU</source>
        <translation>各 GPU</translation>
    </message>
    <message>
        <source>Machine</source>
        <translation>本机</translation>
    </message>
    <message>
        <source>Processes</source>
        <translation>进程</translation>
    </message>
    <message>
        <source>Device details</source>
        <translation>设备详情</translation>
    </message>
    <message>
        <source>Alerts</source>
        <translation>告警</translation>
    </message>
    <message>
        <source>View</source>
        <translation>视图</translation>
    </message>
    <message>
        <source>Show the last {range}</source>
        <translation>显示最近 {range}</translation>
    </message>
    <message>
        <source>Follow live</source>
        <translation>跟随实时</translation>
    </message>
    <message>
        <source>Keep the newest time at the right edge; a drag or Ctrl+wheel leaves it</source>
        <translation>让最新时间保持在右边缘；拖动或 Ctrl+滚轮会退出此模式</translation>
    </message>
    <message>
        <source>Range…</source>
        <translation>时间段…</translation>
    </message>
    <message>
        <source>Show any past range kept on disk</source>
        <translation>显示磁盘上保存的任意过去时间段</translation>
    </message>
    <message>
        <source>Processes by job</source>
        <translation>按作业显示进程</translation>
    </message>
    <message>
        <source>The process panels draw a line per job (notebook, container, Slurm job, ...), its processes added up</source>
        <translation>进程面板为每个作业（笔记本、容器、Slurm 作业……）画一条线，其进程相加</translation>
    </message>
    <message>
        <source>Export CSV…</source>
        <translation>导出 CSV…</translation>
    </message>
    <message>
        <source>Save PNG…</source>
        <translation>保存 PNG…</translation>
    </message>
    <message>
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <source>Alerts and settings</source>
        <translation>告警和设置</translation>
    </message>
    <message>
        <source>Show:</source>
        <translation>显示：</translation>
    </message>
    <message>
        <source>{name} · bus {bus} · {uuid}</source>
        <translation>{name} · 总线 {bus} · {uuid}</translation>
    </message>
    <message>
        <source>Paused: back to live ▶</source>
        <translation>已暂停：回到实时 ▶</translation>
    </message>
    <message>
        <source> — {count} GPUs</source>
        <translation> — {count} 个 GPU</translation>
    </message>
    <message>
        <source> — {count} GPU</source>
        <translation> — {count} 个 GPU</translation>
    </message>
    <message>
        <source> — SIMULATED ({what})</source>
        <translation> — 模拟（{what}）</translation>
    </message>
    <message>
        <source>Waiting for the first reading of the GPUs</source>
        <translation>正在等待 GPU 的首次读数</translation>
    </message>
    <message>
        <source>The Machine tab still shows this computer&apos;s CPU, memory, disk and network.</source>
        <translation>“本机”标签页仍会显示这台计算机的 CPU、内存、磁盘和网络。</translation>
    </message>
    <message>
        <source>SIMULATED: {what}</source>
        <translation>模拟：{what}</translation>
    </message>
    <message>
        <source>reading the history on disk…</source>
        <translation>正在读取磁盘上的历史记录…</translation>
    </message>
    <message>
        <source>driver {driver} · CUDA {cuda}</source>
        <translation>驱动 {driver} · CUDA {cuda}</translation>
    </message>
    <message>
        <source>driver {driver}</source>
        <translation>驱动 {driver}</translation>
    </message>
    <message>
        <source>following live</source>
        <translation>正在跟随实时数据</translation>
    </message>
    <message>
        <source>paused on a past range: press Follow live</source>
        <translation>已停在过去的时间段：点击“跟随实时”继续</translation>
    </message>
    <message>
        <source>history starts {when}: {span} of the {range} range</source>
        <translation>历史记录始于 {when}：仅有 {range} 范围中的 {span}</translation>
    </message>
    <message>
        <source>GPU {gpu}: {energy}</source>
        <translation>GPU {gpu}：{energy}</translation>
    </message>
    <message>
        <source>energy in view: not in the history</source>
        <translation>可见时间段能耗：历史中没有记录</translation>
    </message>
    <message>
        <source>energy in view: {energy}</source>
        <translation>可见时间段能耗：{energy}</translation>
    </message>
    <message>
        <source> (the history covers {covered} of {span})</source>
        <translation>（历史记录覆盖 {span} 中的 {covered}）</translation>
    </message>
    <message>
        <source>GPU {gpu}</source>
        <translation>GPU {gpu}</translation>
    </message>
    <message>
        <source>Export visible range</source>
        <translation>导出可见时间段</translation>
    </message>
    <message>
        <source>Could not export the CSV: {error}.</source>
        <translation>无法导出 CSV：{error}。</translation>
    </message>
    <message>
        <source>Save window as PNG</source>
        <translation>将窗口保存为 PNG</translation>
    </message>
    <message>
        <source>Could not save the PNG: {error}.</source>
        <translation>无法保存 PNG：{error}。</translation>
    </message>
    <message>
        <source>there is no data in the visible range yet</source>
        <translation>可见时间段内还没有数据</translation>
    </message>
    <message>
        <source>could not write {path}</source>
        <translation>无法写入 {path}</translation>
    </message>
    <message>
        <source>Upright lines: alerts (dotted: info, dashed: warning, solid: critical)</source>
        <translation>竖线：告警（点线：信息，虚线：警告，实线：严重）</translation>
    </message>
</context>
<context>
    <name>HostChoice</name>
    <message>
        <source>This machine</source>
        <translation>本机</translation>
    </message>
    <message>
        <source> Host: </source>
        <translation> 主机：</translation>
    </message>
</context>
<context>
    <name>Panel</name>
    <message>
        <source>slowdown {value} °C</source>
        <translation>降速 {value} °C</translation>
    </message>
    <message>
        <source>shutdown {value} °C</source>
        <translation>关机 {value} °C</translation>
    </message>
    <message>
        <source>{panel}: not supported by any GPU here: {why}</source>
        <translation>{panel}：此处没有 GPU 支持：{why}</translation>
    </message>
    <message>
        <source>{panel}: not supported by any GPU here ({models})</source>
        <translation>{panel}：此处没有 GPU 支持（{models}）</translation>
    </message>
    <message>
        <source>no lines here at this time</source>
        <translation>此时刻没有曲线</translation>
    </message>
    <message>
        <source>Not supported on {models}: {why}</source>
        <translation>{models} 不支持：{why}</translation>
    </message>
    <message>
        <source>Not supported on {models}</source>
        <translation>{models} 不支持</translation>
    </message>
    <message>
        <source>No GPU jobs in this range</source>
        <translation>此时间段内没有 GPU 作业</translation>
    </message>
    <message>
        <source>No GPU processes in this range</source>
        <translation>此时间段内没有 GPU 进程</translation>
    </message>
    <message>
        <source>solid</source>
        <translation>实线</translation>
    </message>
    <message>
        <source>dashed</source>
        <translation>虚线</translation>
    </message>
    <message>
        <source>dotted</source>
        <translation>点线</translation>
    </message>
    <message>
        <source>dash-dot</source>
        <translation>点划线</translation>
    </message>
    <message>
        <source>SM share</source>
        <translation>SM 占比</translation>
    </message>
    <message>
        <source>memory</source>
        <translation>显存</translation>
    </message>
    <message>
        <source>, </source>
        <translation>，</translation>
    </message>
    <message>
        <source>red: thermal · orange/amber: power · purple: hardware slowdown · grey: idle · blue: clocks set</source>
        <translation>红：温度 · 橙/琥珀：功耗 · 紫：硬件降速 · 灰：空闲 · 蓝：时钟设定</translation>
    </message>
    <message>
        <source>{mean} (peak {peak})</source>
        <translation>{mean}（峰值 {peak}）</translation>
    </message>
</context>
<context>
    <name>PerGpu</name>
    <message>
        <source>GPU {index} {name}</source>
        <translation>GPU {index} {name}</translation>
    </message>
    <message>
        <source>{gpu} · bus {bus}</source>
        <translation>{gpu} · 总线 {bus}</translation>
    </message>
    <message>
        <source>Hidden: tick it under Show</source>
        <translation>已隐藏：在“显示”中勾选即可</translation>
    </message>
    <message>
        <source>Metric:</source>
        <translation>指标：</translation>
    </message>
</context>
<context>
    <name>PlotPage</name>
    <message>
        <source>Graphs</source>
        <translation>图表</translation>
    </message>
    <message>
        <source>Graphs over time of {panels}. The readings now are on the Device details tab, as text; Export saves the graphs&apos; data as CSV.</source>
        <translation>随时间变化的图表：{panels}。当前读数以文字形式显示在“设备详情”选项卡中；“导出”可将图表数据保存为 CSV。</translation>
    </message>
</context>
<context>
    <name>ProcessModel</name>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>PID</source>
        <translation>PID</translation>
    </message>
    <message>
        <source>User</source>
        <translation>用户</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>GPU memory</source>
        <translation>显存</translation>
    </message>
    <message>
        <source>SM %</source>
        <translation>SM 占比 %</translation>
    </message>
    <message>
        <source>CPU %</source>
        <translation>CPU %</translation>
    </message>
    <message>
        <source>Host RAM</source>
        <translation>主机内存</translation>
    </message>
    <message>
        <source>Runtime</source>
        <translation>运行时长</translation>
    </message>
    <message>
        <source>Type</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>Job</source>
        <translation>作业</translation>
    </message>
    <message>
        <source>Container</source>
        <translation>容器</translation>
    </message>
    <message>
        <source>Slurm</source>
        <translation>Slurm</translation>
    </message>
    <message>
        <source>Notebook</source>
        <translation>笔记本</translation>
    </message>
    <message>
        <source>Unit</source>
        <translation>单元</translation>
    </message>
    <message>
        <source>Session</source>
        <translation>会话</translation>
    </message>
    <message>
        <source>Energy</source>
        <translation>能耗</translation>
    </message>
    <message>
        <source>Job energy</source>
        <translation>作业能耗</translation>
    </message>
    <message>
        <source>Command</source>
        <translation>命令</translation>
    </message>
    <message>
        <source>simulated</source>
        <translation>模拟</translation>
    </message>
    <message>
        <source>(another PID namespace)</source>
        <translation>（其他 PID 命名空间）</translation>
    </message>
    <message>
        <source>(no permission)</source>
        <translation>（无权限）</translation>
    </message>
    <message>
        <source>n/a</source>
        <translation>不可用</translation>
    </message>
</context>
<context>
    <name>ProcessesPage</name>
    <message>
        <source>an unknown amount</source>
        <translation>未知量的</translation>
    </message>
    <message>
        <source>GPU {gpu} is not idle now (or its utilization is unknown).</source>
        <translation>GPU {gpu} 现在并不空闲（或其利用率未知）。</translation>
    </message>
    <message>
        <source>GPU {gpu} has been idle for at least {idle} (since trayvml started).</source>
        <translation>GPU {gpu} 已空闲至少 {idle}（自 trayvml 启动起）。</translation>
    </message>
    <message>
        <source>GPU {gpu} has been idle for {idle}.</source>
        <translation>GPU {gpu} 已空闲 {idle}。</translation>
    </message>
    <message>
        <source>Shut down the kernel of notebook {notebook}?

It holds {memory} of GPU {gpu}&apos;s memory. {state}

What the kernel holds (variables, a loaded model) is lost; the notebook file stays as last saved.</source>
        <translation>关闭笔记本 {notebook} 的内核？

它占用 GPU {gpu} 的 {memory} 显存。{state}

内核中的内容（变量、已加载的模型）将丢失；笔记本文件保持上次保存的状态。</translation>
    </message>
    <message>
        <source>PID {pid} is no longer the kernel of a notebook of yours that a running Jupyter server of yours knows: nothing was shut down.</source>
        <translation>PID {pid} 已不再是你正在运行的 Jupyter 服务器所知的、属于你的笔记本的内核：未关闭任何内核。</translation>
    </message>
    <message>
        <source>End process {pid} ({name})…</source>
        <translation>结束进程 {pid}（{name}）…</translation>
    </message>
    <message>
        <source>Only your own processes, on this computer, can be ended from here</source>
        <translation>在这里只能结束本机上你自己的进程</translation>
    </message>
    <message>
        <source>Shut down kernel of {notebook}…</source>
        <translation>关闭 {notebook} 的内核…</translation>
    </message>
    <message>
        <source>End process {pid} ({name})?

It is sent SIGTERM, as kill does.</source>
        <translation>结束进程 {pid}（{name}）？

将向它发送 SIGTERM，与 kill 命令相同。</translation>
    </message>
    <message>
        <source>Could not end process {pid}: {error}.</source>
        <translation>无法结束进程 {pid}：{error}。</translation>
    </message>
</context>
<context>
    <name>ProcessesTab</name>
    <message>
        <source>Select a notebook kernel of yours, run by a Jupyter server of yours on this computer</source>
        <translation>请选择你自己的笔记本内核（由本机上你自己的 Jupyter 服务器运行）</translation>
    </message>
    <message>
        <source>Job</source>
        <translation>作业</translation>
    </message>
    <message>
        <source>User</source>
        <translation>用户</translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>GPU memory</source>
        <translation>显存</translation>
    </message>
    <message>
        <source>SM %</source>
        <translation>SM 占比 %</translation>
    </message>
    <message>
        <source>GPU time</source>
        <translation>GPU 时间</translation>
    </message>
    <message>
        <source>Energy</source>
        <translation>能耗</translation>
    </message>
    <message>
        <source>Runtime</source>
        <translation>运行时长</translation>
    </message>
    <message>
        <source>Processes</source>
        <translation>进程</translation>
    </message>
    <message>
        <source>GPU memory now</source>
        <translation>当前显存</translation>
    </message>
    <message>
        <source>GPU time since start</source>
        <translation>启动以来的 GPU 时间</translation>
    </message>
    <message>
        <source>Group by job</source>
        <translation>按作业分组</translation>
    </message>
    <message>
        <source>One row per job (notebook, container, Slurm job, systemd unit, terminal session or process tree), its processes beneath</source>
        <translation>每个作业一行（笔记本、容器、Slurm 作业、systemd 单元、终端会话或进程树），其进程列在下方</translation>
    </message>
    <message>
        <source>End process…</source>
        <translation>结束进程…</translation>
    </message>
    <message>
        <source>Shut down kernel…</source>
        <translation>关闭 Jupyter 内核…</translation>
    </message>
    <message>
        <source>Users (all GPUs)</source>
        <translation>用户（所有 GPU）</translation>
    </message>
    <message>
        <source>Select a process first</source>
        <translation>请先选择一个进程</translation>
    </message>
    <message>
        <source>Lists read {age} s ago</source>
        <translation>进程列表于 {age} 秒前读取</translation>
    </message>
    <message>
        <source>Lists read just now</source>
        <translation>进程列表刚刚读取</translation>
    </message>
    <message>
        <source>No process runs on a GPU</source>
        <translation>没有进程在 GPU 上运行</translation>
    </message>
    <message>
        <source>Not shown by job: {hidden}</source>
        <translation>未按作业显示：{hidden}</translation>
    </message>
    <message>
        <source>PID {pid} {name}</source>
        <translation>PID {pid} {name}</translation>
    </message>
    <message>
        <source>at least {time}</source>
        <translation>至少 {time}</translation>
    </message>
    <message>
        <source>(not visible here)</source>
        <translation>（此处不可见）</translation>
    </message>
</context>
<context>
    <name>PushPage</name>
    <message>
        <source>Webhook (JSON)</source>
        <translation>Webhook（JSON）</translation>
    </message>
    <message>
        <source>Slack or Mattermost</source>
        <translation>Slack 或 Mattermost</translation>
    </message>
    <message>
        <source>E-mail (SMTP)</source>
        <translation>电子邮件（SMTP）</translation>
    </message>
    <message>
        <source>STARTTLS (port 587)</source>
        <translation>STARTTLS（端口 587）</translation>
    </message>
    <message>
        <source>SSL/TLS (port 465)</source>
        <translation>SSL/TLS（端口 465）</translation>
    </message>
    <message>
        <source>None (port 25)</source>
        <translation>不加密（端口 25）</translation>
    </message>
    <message>
        <source>Info</source>
        <translation>信息</translation>
    </message>
    <message>
        <source>Warning</source>
        <translation>警告</translation>
    </message>
    <message>
        <source>Critical</source>
        <translation>严重</translation>
    </message>
    <message>
        <source>Alerts also go to these destinations, with this machine&apos;s name in the title. Pausing alerts from the tray menu, and snoozing one, quiets them here too, not only on the desktop.</source>
        <translation>告警也会发送到这些目的地，标题中带有本机名称。在托盘菜单中暂停告警或暂缓某条告警，同样会让这里静默，而不只是桌面通知。</translation>
    </message>
    <message>
        <source>Destinations</source>
        <translation>推送目标</translation>
    </message>
    <message>
        <source>Add</source>
        <translation>添加</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>its kind and host</source>
        <translation>留空则用类型和主机</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>URL</source>
        <translation>URL</translation>
    </message>
    <message>
        <source>optional</source>
        <translation>可选</translation>
    </message>
    <message>
        <source>Access token</source>
        <translation>访问令牌</translation>
    </message>
    <message>
        <source>SMTP server</source>
        <translation>SMTP 服务器</translation>
    </message>
    <message>
        <source>the usual</source>
        <translation>默认</translation>
    </message>
    <message>
        <source>Port</source>
        <translation>端口</translation>
    </message>
    <message>
        <source>Security</source>
        <translation>加密方式</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>User name</source>
        <translation>用户名</translation>
    </message>
    <message>
        <source>Password</source>
        <translation>密码</translation>
    </message>
    <message>
        <source>From</source>
        <translation>发件人</translation>
    </message>
    <message>
        <source>addresses, separated by commas</source>
        <translation>地址，用逗号分隔</translation>
    </message>
    <message>
        <source>To</source>
        <translation>收件人</translation>
    </message>
    <message>
        <source>Rules
(none ticked: every rule)</source>
        <translation>规则
（不勾选：所有规则）</translation>
    </message>
    <message>
        <source>Severities</source>
        <translation>级别</translation>
    </message>
    <message>
        <source>Local time; only critical alerts go out then. Empty: never quiet.</source>
        <translation>本地时间；此时段只发送严重告警。留空：从不静默。</translation>
    </message>
    <message>
        <source>Quiet hours</source>
        <translation>静默时段</translation>
    </message>
    <message>
        <source>Send test notification</source>
        <translation>发送测试通知</translation>
    </message>
    <message>
        <source>Not sent: {problem}.</source>
        <translation>未发送：{problem}。</translation>
    </message>
    <message>
        <source>Sending…</source>
        <translation>正在发送…</translation>
    </message>
    <message>
        <source>trayvml test notification</source>
        <translation>trayvml 测试通知</translation>
    </message>
    <message>
        <source>If you read this, trayvml&apos;s alerts reach you here.</source>
        <translation>如果你看到这条消息，trayvml 的告警就能送达这里。</translation>
    </message>
    <message>
        <source>A test notification was sent to {name}.</source>
        <translation>测试通知已发送到 {name}。</translation>
    </message>
    <message>
        <source>The test notification could not be sent to {name}: {reason}.</source>
        <translation>测试通知无法发送到 {name}：{reason}。</translation>
    </message>
    <message>
        <source>{name} did not answer in time.</source>
        <translation>{name} 未能及时响应。</translation>
    </message>
</context>
<context>
    <name>RemoteHosts</name>
    <message>
        <source>Settings, remote hosts: {error}</source>
        <translation>设置中的远程主机：{error}</translation>
    </message>
    <message>
        <source>unreachable</source>
        <translation>无法连接</translation>
    </message>
    <message>
        <source>unreachable since {time} ({duration})</source>
        <translation>自 {time} 起无法连接（{duration}）</translation>
    </message>
    <message>
        <source>{since}: {fault}</source>
        <translation>{since}：{fault}</translation>
    </message>
    <message>
        <source>{host} (remote: {where})</source>
        <translation>{host}（远程：{where}）</translation>
    </message>
    <message>
        <source>{host} — {simulation}</source>
        <translation>{host} — {simulation}</translation>
    </message>
    <message>
        <source>, unchanged for {age} s</source>
        <translation>，已 {age} 秒未变</translation>
    </message>
    <message>
        <source>, as of {age} s ago</source>
        <translation>，截至 {age} 秒前</translation>
    </message>
    <message>
        <source>  … and {count} more GPUs</source>
        <translation>  … 另有 {count} 个 GPU</translation>
    </message>
    <message>
        <source>… and {count} more hosts</source>
        <translation>… 另有 {count} 台主机</translation>
    </message>
    <message>
        <source>Remote hosts</source>
        <translation>远程主机</translation>
    </message>
    <message>
        <source>{host} — unreachable</source>
        <translation>{host} — 无法连接</translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message>
        <source>Off by default: deep-learning frameworks reserve nearly all of a GPU&apos;s memory while they run, so a high share used is normal and would alert on every busy GPU. Memory free tells when the next allocation is likely to fail.</source>
        <translation>默认关闭：深度学习框架运行时会预留 GPU 的几乎全部显存，因此已用比例高是正常的，开启后每个繁忙的 GPU 都会告警。“可用显存”规则会在下一次分配可能失败时提醒。</translation>
    </message>
    <message>
        <source>On by default: warns when less than 2 GiB is free for half a minute, critical below 0.5 GiB, where the next allocation is likely to fail with out of memory.</source>
        <translation>默认开启：可用显存低于 2 GiB 持续半分钟时警告，低于 0.5 GiB 时为严重，此时下一次分配很可能因显存不足而失败。</translation>
    </message>
    <message>
        <source>Warning at</source>
        <translation>警告阈值</translation>
    </message>
    <message>
        <source>clears</source>
        <translation>恢复</translation>
    </message>
    <message>
        <source>Critical at</source>
        <translation>严重阈值</translation>
    </message>
    <message>
        <source>Hold (s)</source>
        <translation>持续（秒）</translation>
    </message>
    <message>
        <source>Cooldown (s)</source>
        <translation>冷却（秒）</translation>
    </message>
    <message>
        <source>Keep the biggest processes of each GPU</source>
        <translation>保留每个 GPU 最大的进程数</translation>
    </message>
    <message>
        <source>above</source>
        <translation>高于</translation>
    </message>
    <message>
        <source>below</source>
        <translation>低于</translation>
    </message>
    <message>
        <source>System default</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>busy above</source>
        <translation>繁忙：高于</translation>
    </message>
    <message>
        <source>for</source>
        <translation>持续</translation>
    </message>
    <message>
        <source>s,</source>
        <translation>秒，</translation>
    </message>
    <message>
        <source>then idle below</source>
        <translation>随后空闲：低于</translation>
    </message>
    <message>
        <source>s</source>
        <translation>秒</translation>
    </message>
    <message>
        <source>while SM activity below</source>
        <translation>同时 SM 活跃度低于</translation>
    </message>
    <message>
        <source>(without GPM: power below</source>
        <translation>（无 GPM 时：功耗低于上限的</translation>
    </message>
    <message>
        <source>% of limit)</source>
        <translation>%）</translation>
    </message>
    <message>
        <source>memory above</source>
        <translation>显存高于</translation>
    </message>
    <message>
        <source>&lt;b&gt;Rule&lt;/b&gt;</source>
        <translation>&lt;b&gt;规则&lt;/b&gt;</translation>
    </message>
    <message>
        <source>override</source>
        <translation>单独设置</translation>
    </message>
    <message>
        <source>Override {rule} for this GPU</source>
        <translation>为此 GPU 单独设置{rule}</translation>
    </message>
    <message>
        <source>{rule}: {number} must be a number, not {text}.</source>
        <translation>{rule}：{number}必须是数字，而不是 {text}。</translation>
    </message>
    <message>
        <source>trayvml settings</source>
        <translation>trayvml 设置</translation>
    </message>
    <message>
        <source>Show desktop notifications for alerts</source>
        <translation>告警时显示桌面通知</translation>
    </message>
    <message>
        <source>Start trayvml when I log in</source>
        <translation>登录时启动 trayvml</translation>
    </message>
    <message>
        <source>GPUs shown</source>
        <translation>显示的 GPU</translation>
    </message>
    <message>
        <source>The remote hosts, by name and separated by commas, whose GPUs the tray icon shows beside this machine&apos;s; all for every host, empty for none.</source>
        <translation>托盘图标在本机之外还显示其 GPU 的远程主机，按名称以逗号分隔；all 表示所有主机，留空表示不显示。</translation>
    </message>
    <message>
        <source>Tray</source>
        <translation>托盘</translation>
    </message>
    <message>
        <source>Keep in memory for</source>
        <translation>在内存中保留</translation>
    </message>
    <message>
        <source>History</source>
        <translation>历史记录</translation>
    </message>
    <message>
        <source>One URL a line: an exporter (trayvml serve, dcgm-exporter, nvidia_gpu_exporter, nvitop-exporter) or prometheus+http(s)://HOST:9090 with an optional #label selector. user:password@ goes here only.</source>
        <translation>每行一个 URL：一个 exporter（trayvml serve、dcgm-exporter、nvidia_gpu_exporter、nvitop-exporter），或 prometheus+http(s)://HOST:9090，可附加 #标签选择器。user:password@ 只能写在这里。</translation>
    </message>
    <message>
        <source>Remote hosts</source>
        <translation>远程主机</translation>
    </message>
    <message>
        <source>Push</source>
        <translation>推送</translation>
    </message>
    <message>
        <source>all</source>
        <translation>全部</translation>
    </message>
    <message>
        <source>GPU {index}: {problem}</source>
        <translation>GPU {index}：{problem}</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>Hosts in the tray icon</source>
        <translation>托盘图标中的主机</translation>
    </message>
    <message>
        <source>General</source>
        <translation>常规</translation>
    </message>
    <message>
        <source>GPU utilization (%)</source>
        <translation>GPU 利用率（%）</translation>
    </message>
    <message>
        <source>Memory used (%)</source>
        <translation>已用显存（%）</translation>
    </message>
    <message>
        <source>GPU temperature (°C)</source>
        <translation>GPU 温度（°C）</translation>
    </message>
    <message>
        <source>Power draw (% of limit)</source>
        <translation>功耗（占上限的 %）</translation>
    </message>
    <message>
        <source>SM activity (%)</source>
        <translation>SM 活跃度（%）</translation>
    </message>
    <message>
        <source>Keep every second for</source>
        <translation>逐秒数据保留</translation>
    </message>
    <message>
        <source>Keep per-minute min/mean/max for</source>
        <translation>每分钟最小/平均/最大值保留</translation>
    </message>
    <message>
        <source>Use at most</source>
        <translation>最多占用</translation>
    </message>
    <message>
        <source>Serving</source>
        <translation>服务</translation>
    </message>
    <message>
        <source>Alerts</source>
        <translation>告警</translation>
    </message>
    <message>
        <source>GPU {index}: {name}</source>
        <translation>GPU {index}：{name}</translation>
    </message>
    <message>
        <source>Per GPU</source>
        <translation>按 GPU 设置</translation>
    </message>
    <message>
        <source>Turned on or off, it takes effect at the next start.</source>
        <translation>开启或关闭后，下次启动时生效。</translation>
    </message>
    <message>
        <source> days</source>
        <translation> 天</translation>
    </message>
</context>
<context>
    <name>SummaryWindow</name>
    <message>
        <source>warning</source>
        <translation>警告</translation>
    </message>
    <message>
        <source>critical</source>
        <translation>严重</translation>
    </message>
    <message>
        <source>lost</source>
        <translation>已丢失</translation>
    </message>
    <message>
        <source>No system tray was found, so trayvml shows this window instead. On GNOME, the AppIndicator extension adds a tray.</source>
        <translation>未找到系统托盘，因此 trayvml 显示此窗口。在 GNOME 上，AppIndicator 扩展可提供托盘。</translation>
    </message>
    <message>
        <source>Alerts and settings</source>
        <translation>告警和设置</translation>
    </message>
    <message>
        <source>Show graphs</source>
        <translation>显示图表</translation>
    </message>
    <message>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <source>Starting…</source>
        <translation>正在启动…</translation>
    </message>
</context>
<context>
    <name>Tray</name>
    <message>
        <source>Show graphs</source>
        <translation>显示图表</translation>
    </message>
    <message>
        <source>Starting…</source>
        <translation>正在启动…</translation>
    </message>
    <message>
        <source>Copy CUDA_VISIBLE_DEVICES</source>
        <translation>复制 CUDA_VISIBLE_DEVICES</translation>
    </message>
    <message>
        <source>Start with simulated GPUs</source>
        <translation>使用模拟 GPU 启动</translation>
    </message>
    <message>
        <source>Pause alerts</source>
        <translation>暂停告警</translation>
    </message>
    <message>
        <source>For 1 hour</source>
        <translation>暂停 1 小时</translation>
    </message>
    <message>
        <source>Until resumed</source>
        <translation>直到手动恢复</translation>
    </message>
    <message>
        <source>Resume alerts</source>
        <translation>恢复告警</translation>
    </message>
    <message>
        <source>Start at login</source>
        <translation>登录时启动</translation>
    </message>
    <message>
        <source>Settings…</source>
        <translation>设置…</translation>
    </message>
    <message>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <source>Alerts paused</source>
        <translation>告警已暂停</translation>
    </message>
    <message>
        <source>{count} active alerts</source>
        <translation>{count} 个活动告警</translation>
    </message>
    <message>
        <source>1 active alert</source>
        <translation>1 个活动告警</translation>
    </message>
    <message>
        <source>Copy CUDA_VISIBLE_DEVICES for GPU {index}</source>
        <translation>复制 GPU {index} 的 CUDA_VISIBLE_DEVICES</translation>
    </message>
</context>
<context>
    <name>alerts</name>
    <message>
        <source>GPU {index} {name}</source>
        <translation>GPU {index} {name}</translation>
    </message>
    <message>
        <source>{gpu}: {rule} back to normal</source>
        <translation>{gpu}：{rule}已恢复正常</translation>
    </message>
    <message>
        <source>{gpu}: {message}</source>
        <translation>{gpu}：{message}</translation>
    </message>
    <message>
        <source>{rule}: a time cannot be negative ({name} = {value}).</source>
        <translation>{rule}：时间不能为负数（{name} = {value}）。</translation>
    </message>
    <message>
        <source>Critical at {enter} {unit} or above; clears at {clear} {unit} or below.</source>
        <translation>达到或高于 {enter} {unit} 为严重；降到 {clear} {unit} 或以下时恢复。</translation>
    </message>
    <message>
        <source>Critical at {enter} {unit} or below; clears at {clear} {unit} or above.</source>
        <translation>达到或低于 {enter} {unit} 为严重；升到 {clear} {unit} 或以上时恢复。</translation>
    </message>
    <message>
        <source>Warning at {enter} {unit} or above; clears at {clear} {unit} or below.</source>
        <translation>达到或高于 {enter} {unit} 为警告；降到 {clear} {unit} 或以下时恢复。</translation>
    </message>
    <message>
        <source>Warning at {enter} {unit} or below; clears at {clear} {unit} or above.</source>
        <translation>达到或低于 {enter} {unit} 为警告；升到 {clear} {unit} 或以上时恢复。</translation>
    </message>
    <message>
        <source>critical</source>
        <translation>严重</translation>
    </message>
    <message>
        <source>{rule} critical at {value}</source>
        <translation>{rule}达到严重级别：{value}</translation>
    </message>
    <message>
        <source>{host}: </source>
        <translation>{host}：</translation>
    </message>
    <message>
        <source>GPU {index}</source>
        <translation>GPU {index}</translation>
    </message>
    <message>
        <source>{rule} no longer watched (the GPU is gone)</source>
        <translation>{rule}不再监视（该 GPU 已不存在）</translation>
    </message>
    <message>
        <source>{gpu}: answering again (back on the bus)</source>
        <translation>{gpu}：已恢复响应（重新出现在总线上）</translation>
    </message>
    <message>
        <source>{rule} high at {value}</source>
        <translation>{rule}过高：{value}</translation>
    </message>
    <message>
        <source>{rule} low at {value}</source>
        <translation>{rule}过低：{value}</translation>
    </message>
    <message>
        <source>warning</source>
        <translation>警告</translation>
    </message>
    <message>
        <source>above</source>
        <translation>高于</translation>
    </message>
    <message>
        <source>below</source>
        <translation>低于</translation>
    </message>
    <message>
        <source>{rule}: the {level} level needs a clear threshold.</source>
        <translation>{rule}：{level}级别需要设置恢复阈值。</translation>
    </message>
    <message>
        <source>{rule}: the {level} clear threshold ({clear}) must be {side} its enter threshold ({enter}), or a value near it would alert again and again.</source>
        <translation>{rule}：{level}级别的恢复阈值（{clear}）必须{side}其触发阈值（{enter}），否则数值在阈值附近波动时会反复告警。</translation>
    </message>
    <message>
        <source>{rule}: the critical threshold must be beyond the warning one.</source>
        <translation>{rule}：严重阈值必须比警告阈值更极端。</translation>
    </message>
    <message>
        <source>back to normal</source>
        <translation>已恢复正常</translation>
    </message>
    <message>
        <source>lost: fell off the bus</source>
        <translation>已丢失：从总线上掉线</translation>
    </message>
    <message>
        <source>back</source>
        <translation>已恢复</translation>
    </message>
    <message>
        <source>graphics engine exception</source>
        <translation>图形引擎异常</translation>
    </message>
    <message>
        <source>GPU memory page fault</source>
        <translation>显存页错误</translation>
    </message>
    <message>
        <source>GPU stopped processing</source>
        <translation>GPU 停止处理</translation>
    </message>
    <message>
        <source>preemptive cleanup</source>
        <translation>抢占式清理</translation>
    </message>
    <message>
        <source>double-bit ECC error</source>
        <translation>双比特 ECC 错误</translation>
    </message>
    <message>
        <source>internal micro-controller breakpoint</source>
        <translation>内部微控制器断点</translation>
    </message>
    <message>
        <source>internal micro-controller halt</source>
        <translation>内部微控制器停机</translation>
    </message>
    <message>
        <source>ECC page retirement or row remapping</source>
        <translation>ECC 页面退役或行重映射</translation>
    </message>
    <message>
        <source>ECC page retirement or row remapping failure</source>
        <translation>ECC 页面退役或行重映射失败</translation>
    </message>
    <message>
        <source>NVLink error</source>
        <translation>NVLink 错误</translation>
    </message>
    <message>
        <source>GPU has fallen off the bus</source>
        <translation>GPU 已从总线上掉线</translation>
    </message>
    <message>
        <source>high single-bit ECC error rate</source>
        <translation>单比特 ECC 错误率过高</translation>
    </message>
    <message>
        <source>contained ECC error</source>
        <translation>已隔离的 ECC 错误</translation>
    </message>
    <message>
        <source>uncontained ECC error</source>
        <translation>未隔离的 ECC 错误</translation>
    </message>
    <message>
        <source>see NVIDIA&apos;s XID catalog</source>
        <translation>请查阅 NVIDIA 的 XID 错误列表</translation>
    </message>
    <message>
        <source>thermal throttling</source>
        <translation>温度降频</translation>
    </message>
    <message>
        <source>power throttling</source>
        <translation>功耗降频</translation>
    </message>
    <message>
        <source>hardware slowdown</source>
        <translation>硬件降速</translation>
    </message>
    <message>
        <source>job finished after {duration} (idle now)</source>
        <translation>作业在运行 {duration} 后完成（现已空闲）</translation>
    </message>
    <message>
        <source>{rule}: {what} must be a percentage from 0 to 100.</source>
        <translation>{rule}：{what}必须是 0 到 100 之间的百分比。</translation>
    </message>
    <message>
        <source>busy above</source>
        <translation>“繁忙：高于”</translation>
    </message>
    <message>
        <source>idle below</source>
        <translation>“空闲：低于”</translation>
    </message>
    <message>
        <source>{rule}: idle below ({idle} %) must be under busy above ({busy} %), or a GPU would be busy and idle at once.</source>
        <translation>{rule}：“空闲：低于”（{idle} %）必须小于“繁忙：高于”（{busy} %），否则 GPU 会同时处于繁忙和空闲状态。</translation>
    </message>
    <message>
        <source>Utilization {util} % while power is {idle} % of the power limit: a kernel is resident but nothing runs (a deadlocked collective?).</source>
        <translation>利用率 {util} %，而功耗仅为功耗上限的 {idle} %：有 CUDA 核函数驻留但没有实际运行（集合通信死锁？）。</translation>
    </message>
    <message>
        <source>Utilization {util} % while SM activity is {idle} %: a kernel is resident but nothing runs (a deadlocked collective?).</source>
        <translation>利用率 {util} %，而 SM 活跃度仅为 {idle} %：有 CUDA 核函数驻留但没有实际运行（集合通信死锁？）。</translation>
    </message>
    <message>
        <source>job stalled</source>
        <translation>作业停滞</translation>
    </message>
    <message>
        <source>SM below</source>
        <translation>“SM 低于”</translation>
    </message>
    <message>
        <source>power below</source>
        <translation>“功耗低于”</translation>
    </message>
    <message>
        <source>{memory} GiB held, GPU idle for {duration}</source>
        <translation>占用 {memory} GiB 显存，GPU 已空闲 {duration}</translation>
    </message>
    <message>
        <source>A notebook kernel left open, or a crashed job&apos;s process, may be holding it.</source>
        <translation>未关闭的笔记本内核或崩溃作业的进程可能占用着它。</translation>
    </message>
    <message>
        <source>{rule}: memory above must be a number of GiB, 0 or more.</source>
        <translation>{rule}：“显存高于”必须是不小于 0 的 GiB 数。</translation>
    </message>
    <message>
        <source> A GPU may be wedged (see `dmesg` for Xid errors).</source>
        <translation>可能有 GPU 卡死（在 `dmesg` 中查看 Xid 错误）。</translation>
    </message>
    <message>
        <source>GPU driver answering again</source>
        <translation>GPU 驱动已恢复响应</translation>
    </message>
    <message>
        <source>GPU temperature</source>
        <translation>GPU 温度</translation>
    </message>
    <message>
        <source>Margin to the shutdown temperature</source>
        <translation>距关机温度的余量</translation>
    </message>
    <message>
        <source>Memory used</source>
        <translation>已用显存</translation>
    </message>
    <message>
        <source>Memory free</source>
        <translation>可用显存</translation>
    </message>
    <message>
        <source>Power draw</source>
        <translation>功耗</translation>
    </message>
    <message>
        <source>GPU lost</source>
        <translation>GPU 丢失</translation>
    </message>
    <message>
        <source>GPU driver not responding</source>
        <translation>GPU 驱动无响应</translation>
    </message>
    <message>
        <source>XID error</source>
        <translation>XID 错误</translation>
    </message>
    <message>
        <source>Thermal or power throttling</source>
        <translation>温度或功耗降频</translation>
    </message>
    <message>
        <source>Job finished</source>
        <translation>作业完成</translation>
    </message>
    <message>
        <source>Stalled job</source>
        <translation>作业停滞</translation>
    </message>
    <message>
        <source>Memory held, GPU idle</source>
        <translation>显存被占用，GPU 空闲</translation>
    </message>
    <message>
        <source>{rule}: these settings are for another kind of rule.</source>
        <translation>{rule}：这些设置属于另一种规则。</translation>
    </message>
    <message>
        <source>{rule} no longer watched (its rule was turned off)</source>
        <translation>{rule}不再监视（其规则已关闭）</translation>
    </message>
</context>
<context>
    <name>argparse</name>
    <message>
        <source>usage: </source>
        <translation>用法：</translation>
    </message>
    <message>
        <source>options</source>
        <translation>选项</translation>
    </message>
    <message>
        <source>positional arguments</source>
        <translation>位置参数</translation>
    </message>
    <message>
        <source>show this help message and exit</source>
        <translation>显示此帮助信息并退出</translation>
    </message>
    <message>
        <source>invalid choice: %(value)r (choose from %(choices)s)</source>
        <translation>无效的选择：%(value)r（可选：%(choices)s）</translation>
    </message>
    <message>
        <source>the following arguments are required: %s</source>
        <translation>缺少以下必需参数：%s</translation>
    </message>
    <message>
        <source>unrecognized arguments: %s</source>
        <translation>无法识别的参数：%s</translation>
    </message>
    <message>
        <source>expected one argument</source>
        <translation>需要一个参数值</translation>
    </message>
    <message>
        <source>argument %(argument_name)s: %(message)s</source>
        <translation>参数 %(argument_name)s：%(message)s</translation>
    </message>
</context>
<context>
    <name>cli</name>
    <message>
        <source>{prog}: {message} (see {prog} --help)</source>
        <translation>{prog}：{message}（参见 {prog} --help）</translation>
    </message>
    <message>
        <source>{text} is not {kind}</source>
        <translation>{text} 不是{kind}</translation>
    </message>
    <message>
        <source>a number of {unit}</source>
        <translation>以{unit}为单位的数字</translation>
    </message>
    <message>
        <source>is not between {low} and {high} {unit}</source>
        <translation>不在 {low} 到 {high} {unit}之间</translation>
    </message>
    <message>
        <source>is not from 1 to {maximum}</source>
        <translation>不在 1 到 {maximum} 之间</translation>
    </message>
    <message>
        <source>a whole number</source>
        <translation>整数</translation>
    </message>
    <message>
        <source>seconds</source>
        <translation>秒</translation>
    </message>
    <message>
        <source>wants the path of a settings file</source>
        <translation>需要一个设置文件的路径</translation>
    </message>
    <message>
        <source>use simulated GPUs: SCENARIO[:key=value,...], scenarios {scenarios} (alone: training, half an hour into the job); also TRAYVML_SIMULATE</source>
        <translation>使用模拟 GPU：SCENARIO[:key=value,...]，场景可选 {scenarios}（不带参数时为 training，作业已运行半小时）；也可用 TRAYVML_SIMULATE 设置</translation>
    </message>
    <message>
        <source>settings file (default: in your config folder)</source>
        <translation>设置文件（默认在你的配置目录中）</translation>
    </message>
    <message>
        <source>give up when the NVIDIA driver has not answered for S seconds (default {default})</source>
        <translation>NVIDIA 驱动 S 秒未响应时放弃（默认 {default}）</translation>
    </message>
    <message>
        <source>also show a remote host&apos;s GPUs (repeatable): an exporter (trayvml serve, dcgm-exporter, nvidia_gpu_exporter, nvitop-exporter) or prometheus+http(s)://HOST:9090[#SELECTOR]; credentials only in the settings file (remote_hosts)</source>
        <translation>同时显示远程主机的 GPU（可重复）：一个 exporter（trayvml serve、dcgm-exporter、nvidia_gpu_exporter、nvitop-exporter）或 prometheus+http(s)://HOST:9090[#SELECTOR]；凭据只能写在设置文件中（remote_hosts）</translation>
    </message>
    <message>
        <source>A system-tray monitor for NVIDIA GPUs.</source>
        <translation>NVIDIA GPU 的系统托盘监视器。</translation>
    </message>
    <message>
        <source>show program&apos;s version number and exit</source>
        <translation>显示程序版本号并退出</translation>
    </message>
    <message>
        <source>say more on stderr: -v each alert and its outcome, -vv each sample</source>
        <translation>在 stderr 上输出更多信息：-v 输出每条告警及其结果，-vv 输出每次采样</translation>
    </message>
    <message>
        <source>print every GPU&apos;s current values</source>
        <translation>打印每个 GPU 的当前数值</translation>
    </message>
    <message>
        <source>JSON with units in the key names</source>
        <translation>输出 JSON，单位写在键名中</translation>
    </message>
    <message>
        <source>every metric and static fact per GPU</source>
        <translation>每个 GPU 的全部指标和静态信息</translation>
    </message>
    <message>
        <source>append CSV rows like nvidia-smi --format=csv</source>
        <translation>追加 CSV 行，格式同 nvidia-smi --format=csv</translation>
    </message>
    <message>
        <source>seconds between rows, {minimum} to {maximum} (default {default})</source>
        <translation>两行之间的秒数，{minimum} 到 {maximum}（默认 {default}）</translation>
    </message>
    <message>
        <source>the CSV file (appended to when its header matches; default: standard output)</source>
        <translation>CSV 文件（表头一致时追加写入；默认：标准输出）</translation>
    </message>
    <message>
        <source>as nvidia-smi&apos;s: csv, with noheader and nounits in any order (csv,noheader,nounits)</source>
        <translation>与 nvidia-smi 相同：csv，可按任意顺序加上 noheader 和 nounits（csv,noheader,nounits）</translation>
    </message>
    <message>
        <source>--csv wants a file name, or - for standard output.</source>
        <translation>--csv 需要一个文件名，或用 - 表示标准输出。</translation>
    </message>
    <message>
        <source>stop after N ticks (default: until Ctrl-C)</source>
        <translation>采样 N 次后停止（默认：直到按下 Ctrl-C）</translation>
    </message>
    <message>
        <source>seconds between samples of this machine&apos;s GPUs, {minimum} to {maximum} (default: the tray app&apos;s settings; {log} for log)</source>
        <translation>本机 GPU 的采样间隔秒数，{minimum} 到 {maximum}（默认：托盘程序的设置；log 命令为 {log}）</translation>
    </message>
    <message>
        <source>comma-separated nvidia-smi field names</source>
        <translation>以逗号分隔的 nvidia-smi 字段名</translation>
    </message>
    <message>
        <source>values without units, as --format=csv,nounits</source>
        <translation>数值不带单位，同 --format=csv,nounits</translation>
    </message>
    <message>
        <source>print the field names and exit</source>
        <translation>打印字段名并退出</translation>
    </message>
    <message>
        <source>print the freest GPUs for CUDA_VISIBLE_DEVICES</source>
        <translation>打印最空闲的 GPU，用于 CUDA_VISIBLE_DEVICES</translation>
    </message>
    <message>
        <source>how many GPUs to print (default 1)</source>
        <translation>要输出的 GPU 数量（默认 1）</translation>
    </message>
    <message>
        <source>what makes a GPU freer: the most free memory (default), the largest free share of its memory, the lowest power draw as a share of its limit, or the lowest utilization</source>
        <translation>按什么判断 GPU 更空闲：可用显存最多（默认）、可用显存占比最大、功耗占上限比例最低，或利用率最低</translation>
    </message>
    <message>
        <source>a GPU with less than M MiB of free memory does not qualify</source>
        <translation>可用显存少于 M MiB 的 GPU 不符合条件</translation>
    </message>
    <message>
        <source>a GPU busier than PERCENT does not qualify (default {default}; 100: any)</source>
        <translation>忙碌程度超过 PERCENT 的 GPU 不符合条件（默认 {default}；100：任意）</translation>
    </message>
    <message>
        <source>print GPU UUIDs instead of indices</source>
        <translation>打印 GPU 的 UUID 而不是索引</translation>
    </message>
    <message>
        <source>start trayvml at login: on, off or status</source>
        <translation>登录时启动 trayvml：on（开启）、off（关闭）或 status（状态）</translation>
    </message>
    <message>
        <source>add trayvml to the application menu, with its icons: install or uninstall</source>
        <translation>将 trayvml 及其图标添加到应用程序菜单：install（安装）或 uninstall（卸载）</translation>
    </message>
    <message>
        <source>check the driver, permissions, desktop and files, and explain</source>
        <translation>检查驱动、权限、桌面和文件，并加以说明</translation>
    </message>
    <message>
        <source>the checks as JSON</source>
        <translation>以 JSON 输出检查结果</translation>
    </message>
    <message>
        <source>also write a report to attach to an issue (host, user, home and GPU ids redacted)</source>
        <translation>另写一份可附在问题报告中的报告（主机名、用户名、主目录和 GPU 标识已隐去）</translation>
    </message>
    <message>
        <source>instead, record every NVML call and answer (and nvidia-smi&apos;s, where it is installed) to FILE</source>
        <translation>改为把每次 NVML 调用及其应答（以及已安装时 nvidia-smi 的输出）记录到 FILE</translation>
    </message>
    <message>
        <source>how long --record records (default 60)</source>
        <translation>--record 记录多长时间（默认 60）</translation>
    </message>
    <message>
        <source>serve the GPUs&apos; metrics to Prometheus on /metrics</source>
        <translation>在 /metrics 上向 Prometheus 提供 GPU 指标</translation>
    </message>
    <message>
        <source>where to listen (default {address}, this machine only; another address is reachable from other machines)</source>
        <translation>监听地址（默认 {address}，仅本机可访问；其他地址可被其他机器访问）</translation>
    </message>
    <message>
        <source>basic auth and TLS, as Prometheus exporters&apos; --web.config.file (YAML: tls_server_config, basic_auth_users with bcrypt hashes)</source>
        <translation>基本认证和 TLS，同 Prometheus exporter 的 --web.config.file（YAML：tls_server_config、含 bcrypt 哈希的 basic_auth_users）</translation>
    </message>
    <message>
        <source>--remote is for snapshot, log and the tray app, not {command}.</source>
        <translation>--remote 只用于 snapshot、log 和托盘程序，不能用于 {command}。</translation>
    </message>
    <message>
        <source>--{option} was given an empty name.</source>
        <translation>--{option} 的名称为空。</translation>
    </message>
    <message>
        <source>--listen was given an empty address: HOST:PORT, or :PORT for every address.</source>
        <translation>--listen 的地址为空：请写 HOST:PORT，或用 :PORT 表示所有地址。</translation>
    </message>
    <message>
        <source>standard output is closed: trayvml {command} has nowhere to write.</source>
        <translation>标准输出已关闭：trayvml {command} 无处写入。</translation>
    </message>
    <message>
        <source>{problem} (still trying)</source>
        <translation>{problem}（仍在重试）</translation>
    </message>
    <message>
        <source>{ticks} ticks logged to {path}</source>
        <translation>已记录 {ticks} 次采样到 {path}</translation>
    </message>
    <message>
        <source>1 tick logged to {path}</source>
        <translation>已记录 1 次采样到 {path}</translation>
    </message>
    <message>
        <source>standard output</source>
        <translation>标准输出</translation>
    </message>
    <message>
        <source>Could not change {location}: {error}.</source>
        <translation>无法修改 {location}：{error}。</translation>
    </message>
    <message>
        <source>Start at login is on ({location}).</source>
        <translation>登录时启动：已开启（{location}）。</translation>
    </message>
    <message>
        <source>Start at login is off ({location}).</source>
        <translation>登录时启动：已关闭（{location}）。</translation>
    </message>
    <message>
        <source>desktop install is for Linux and other freedesktop desktops; use autostart here.</source>
        <translation>desktop install 适用于 Linux 及其他 freedesktop 桌面；在此请使用 autostart。</translation>
    </message>
    <message>
        <source>Installed the launcher and {count} icons under {folder}.</source>
        <translation>已在 {folder} 下安装启动器和 {count} 个图标。</translation>
    </message>
    <message>
        <source>Removed {count} files trayvml had installed.</source>
        <translation>已删除 trayvml 安装的 {count} 个文件。</translation>
    </message>
    <message>
        <source>the history folder (default: in your state folder)</source>
        <translation>历史记录目录（默认在你的状态目录中）</translation>
    </message>
    <message>
        <source>write the history store without the tray (servers)</source>
        <translation>不启动托盘，直接写入历史记录存储（用于服务器）</translation>
    </message>
    <message>
        <source>export stored history as CSV (the columns of log)</source>
        <translation>将已存储的历史记录导出为 CSV（列与 log 相同）</translation>
    </message>
    <message>
        <source>e.g. 90m, 2h, 3d (default 1h)</source>
        <translation>例如 90m、2h、3d（默认 1h）</translation>
    </message>
    <message>
        <source>ISO date and time, local unless it says its zone</source>
        <translation>ISO 格式的日期和时间，未注明时区时按本地时间</translation>
    </message>
    <message>
        <source>with --from (default: now)</source>
        <translation>与 --from 一起使用（默认：现在）</translation>
    </message>
    <message>
        <source>the CSV file, or - for standard output (default)</source>
        <translation>CSV 文件，或用 - 表示标准输出（默认）</translation>
    </message>
    <message>
        <source>comma-separated nvidia-smi field names, as for log</source>
        <translation>以逗号分隔的 nvidia-smi 字段名，同 log</translation>
    </message>
    <message>
        <source>only the GPU with this index</source>
        <translation>只导出此编号的 GPU</translation>
    </message>
    <message>
        <source>values without units</source>
        <translation>数值不带单位</translation>
    </message>
    <message>
        <source>print the span, samples and bytes stored, and exit</source>
        <translation>打印已存储的时间跨度、样本数和字节数，然后退出</translation>
    </message>
    <message>
        <source>export the GPU processes&apos; memory and SM share instead of the GPUs&apos; metrics</source>
        <translation>导出 GPU 进程的显存和 SM 占比，而不是 GPU 的指标</translation>
    </message>
    <message>
        <source>wants the path of a folder</source>
        <translation>需要一个文件夹的路径</translation>
    </message>
</context>
<context>
    <name>csvlog</name>
    <message>
        <source>trayvml&apos;s own: this machine&apos;s name, not nvidia-smi&apos;s field of that name</source>
        <translation>trayvml 自有字段：本机的主机名，而非 nvidia-smi 的同名字段</translation>
    </message>
    <message>
        <source>trayvml&apos;s own: nvidia-smi does not know it</source>
        <translation>trayvml 自有字段：nvidia-smi 不认识它</translation>
    </message>
    <message>
        <source>--format does not know {word}: it takes csv, noheader and nounits.</source>
        <translation>--format 不认识 {word}：它接受 csv、noheader 和 nounits。</translation>
    </message>
    <message>
        <source>--format needs csv, as nvidia-smi&apos;s: csv,noheader,nounits.</source>
        <translation>--format 需要 csv，与 nvidia-smi 相同：csv,noheader,nounits。</translation>
    </message>
    <message>
        <source> Did you mean {fields}?</source>
        <translation>你是否想用 {fields}？</translation>
    </message>
    <message>
        <source> or </source>
        <translation> 或 </translation>
    </message>
    <message>
        <source> Run `trayvml log --list-fields` for the list.</source>
        <translation>运行 `trayvml log --list-fields` 查看字段列表。</translation>
    </message>
    <message>
        <source>Unknown field {field} in --query.{hint}</source>
        <translation>--query 中有未知字段 {field}。{hint}</translation>
    </message>
    <message>
        <source>--query names no fields.</source>
        <translation>--query 没有指定任何字段。</translation>
    </message>
    <message>
        <source>Cannot write {path}: {error}.</source>
        <translation>无法写入 {path}：{error}。</translation>
    </message>
    <message>
        <source>{path} already holds a log with other columns ({columns}); choose another file or the same --query, so that nothing in it is mixed up.</source>
        <translation>{path} 中已有列不同的日志（{columns}）；请换一个文件或使用相同的 --query，以免内容混杂。</translation>
    </message>
    <message>
        <source>{path} already holds a log with units; choose another file or the same --format.</source>
        <translation>{path} 中已有带单位的日志；请换一个文件，或使用相同的 --format。</translation>
    </message>
    <message>
        <source>{path} already holds a log without units (nounits); choose another file or the same --format.</source>
        <translation>{path} 中已有不带单位（nounits）的日志；请换一个文件，或使用相同的 --format。</translation>
    </message>
    <message>
        <source>Cannot read {path}: {error}.</source>
        <translation>无法读取 {path}：{error}。</translation>
    </message>
    <message>
        <source>Cannot write {path}: {error}; the rows already in it are whole.</source>
        <translation>无法写入 {path}：{error}；已写入的行完整无损。</translation>
    </message>
</context>
<context>
    <name>desktop</name>
    <message>
        <source>The list of installed files {path} cannot be read ({error}).</source>
        <translation>无法读取已安装文件列表 {path}（{error}）。</translation>
    </message>
    <message>
        <source>The list of installed files {path} is not one this trayvml wrote.</source>
        <translation>已安装文件列表 {path} 不是此 trayvml 写入的。</translation>
    </message>
    <message>
        <source>{path} was not written by trayvml, or was changed since: left as it is.</source>
        <translation>{path} 不是由 trayvml 写入的，或之后已被修改：保持原样。</translation>
    </message>
    <message>
        <source>Could not write {path}: {error}.</source>
        <translation>无法写入 {path}：{error}。</translation>
    </message>
    <message>
        <source>Nothing to remove: no trayvml desktop files are recorded in {path}.</source>
        <translation>没有可删除的内容：{path} 中没有记录任何 trayvml 桌面文件。</translation>
    </message>
    <message>
        <source>Left {path} in place: it has changed since trayvml wrote it.</source>
        <translation>已保留 {path}：自 trayvml 写入后它已被修改。</translation>
    </message>
    <message>
        <source>Could not remove {path}: {error}.</source>
        <translation>无法删除 {path}：{error}。</translation>
    </message>
    <message>
        <source>{tool} did not finish within {seconds} s: {cache} may be out of date.</source>
        <translation>{tool} 未在 {seconds} 秒内完成：{cache} 可能已过时。</translation>
    </message>
    <message>
        <source>{tool} could not run ({error}): {cache} may be out of date.</source>
        <translation>{tool} 无法运行（{error}）：{cache} 可能已过时。</translation>
    </message>
    <message>
        <source>exit status {code}</source>
        <translation>退出状态 {code}</translation>
    </message>
    <message>
        <source>{tool} failed ({reason}): {cache} may be out of date.</source>
        <translation>{tool} 失败（{reason}）：{cache} 可能已过时。</translation>
    </message>
</context>
<context>
    <name>doctor</name>
    <message>
        <source>DBUS_SESSION_BUS_ADDRESS is not set</source>
        <translation>未设置 DBUS_SESSION_BUS_ADDRESS</translation>
    </message>
    <message>
        <source>No session D-Bus answered ({error}): no tray icon and no desktop notifications here.</source>
        <translation>会话 D-Bus 没有应答（{error}）：此处没有托盘图标，也没有桌面通知。</translation>
    </message>
    <message>
        <source>A tray host (StatusNotifierWatcher) is running.</source>
        <translation>托盘宿主（StatusNotifierWatcher）正在运行。</translation>
    </message>
    <message>
        <source>No tray host (StatusNotifierWatcher) is on the session bus: trayvml shows a small window instead of a tray icon. On GNOME, the AppIndicator extension adds one.</source>
        <translation>会话总线上没有托盘宿主（StatusNotifierWatcher）：trayvml 将显示一个小窗口而不是托盘图标。在 GNOME 上，AppIndicator 扩展可提供托盘宿主。</translation>
    </message>
    <message>
        <source>A notification service is available.</source>
        <translation>通知服务可用。</translation>
    </message>
    <message>
        <source>No notification service (org.freedesktop.Notifications): alerts show only in trayvml.</source>
        <translation>没有通知服务（org.freedesktop.Notifications）：告警只会显示在 trayvml 中。</translation>
    </message>
    <message>
        <source>NVML library loaded: {where}.</source>
        <translation>已加载 NVML 库：{where}。</translation>
    </message>
    <message>
        <source>The NVML library (libnvidia-ml) was not found: is the NVIDIA driver installed?</source>
        <translation>未找到 NVML 库（libnvidia-ml）：是否已安装 NVIDIA 驱动？</translation>
    </message>
    <message>
        <source>Driver {driver}, NVML {nvml}, CUDA {cuda}.</source>
        <translation>驱动 {driver}，NVML {nvml}，CUDA {cuda}。</translation>
    </message>
    <message>
        <source>No processes use the GPUs now, so whether others&apos; can be seen cannot be told.</source>
        <translation>目前没有进程使用 GPU，因此无法判断能否看到其他用户的进程。</translation>
    </message>
    <message>
        <source>{hidden} of {total} GPU processes cannot be named (other users&apos; processes, or another container&apos;s): run as their owner or as root to see them.</source>
        <translation>{total} 个 GPU 进程中有 {hidden} 个无法识别名称（其他用户的进程，或其他容器中的进程）：以其所有者或 root 身份运行才能看到。</translation>
    </message>
    <message>
        <source>Every one of the {total} GPU processes can be named.</source>
        <translation>全部 {total} 个 GPU 进程都能识别名称。</translation>
    </message>
    <message>
        <source>No runtime power state in sysfs (not Linux, or no sysfs): NVML alone is asked.</source>
        <translation>sysfs 中没有运行时电源状态（不是 Linux，或没有 sysfs）：只询问 NVML。</translation>
    </message>
    <message>
        <source>on</source>
        <translation>开启</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <source>{address}: its runtime power state cannot be read.</source>
        <translation>{address}：无法读取其运行时电源状态。</translation>
    </message>
    <message>
        <source>{address}: runtime-suspended; trayvml does not wake it.</source>
        <translation>{address}：处于运行时挂起状态；trayvml 不会唤醒它。</translation>
    </message>
    <message>
        <source>{address}: {status}, runtime power management {managed}.</source>
        <translation>{address}：{status}，运行时电源管理{managed}。</translation>
    </message>
    <message>
        <source>GPU {index} has fallen off the bus.</source>
        <translation>GPU {index} 已从总线上掉线。</translation>
    </message>
    <message>
        <source>GPU {index} is asleep: its metrics are read when it wakes.</source>
        <translation>GPU {index} 正在休眠：待其自行唤醒后再读取指标。</translation>
    </message>
    <message>
        <source>{name}: {supported} of {total} metrics read.</source>
        <translation>{name}：已读取 {total} 项指标中的 {supported} 项。</translation>
    </message>
    <message>
        <source>Not supported by this GPU: {names}.</source>
        <translation>此 GPU 不支持：{names}。</translation>
    </message>
    <message>
        <source>No permission: {names}.</source>
        <translation>无权限：{names}。</translation>
    </message>
    <message>
        <source>No settings file at {path}: defaults are in use.</source>
        <translation>{path} 处没有设置文件：正在使用默认设置。</translation>
    </message>
    <message>
        <source>The settings file {path} cannot be used ({reason}): trayvml will use defaults.</source>
        <translation>设置文件 {path} 无法使用（{reason}）：trayvml 将使用默认设置。</translation>
    </message>
    <message>
        <source>The settings file {path} cannot be used ({reason}): trayvml will set it aside and use defaults.</source>
        <translation>设置文件 {path} 无法使用（{reason}）：trayvml 将把它移到一旁并使用默认设置。</translation>
    </message>
    <message>
        <source>The settings file {path} cannot be read: {reason}.</source>
        <translation>无法读取设置文件 {path}：{reason}。</translation>
    </message>
    <message>
        <source>The settings file {path} loads with changes: {changes}.</source>
        <translation>设置文件 {path} 加载时有改动：{changes}。</translation>
    </message>
    <message>
        <source>The settings file {path} loads.</source>
        <translation>设置文件 {path} 可以正常加载。</translation>
    </message>
    <message>
        <source>{count} unusable settings files were set aside earlier: {names}.</source>
        <translation>之前有 {count} 个无法使用的设置文件被移到一旁：{names}。</translation>
    </message>
    <message>
        <source>Alerts are pushed to {name}; no failure is recorded.</source>
        <translation>告警推送到 {name}；没有失败记录。</translation>
    </message>
    <message>
        <source>Alerts could not be pushed to {name} at {when}: {reason}.</source>
        <translation>告警在 {when} 无法推送到 {name}：{reason}。</translation>
    </message>
    <message>
        <source>Alerts are pushed to {name}; it last failed at {when} ({reason}).</source>
        <translation>告警推送到 {name}；上次失败于 {when}（{reason}）。</translation>
    </message>
    <message>
        <source>The history folder {folder} cannot be made: {path} is a file.</source>
        <translation>无法创建历史记录目录 {folder}：{path} 是一个文件。</translation>
    </message>
    <message>
        <source>The history folder {folder} is not writable: no history is kept.</source>
        <translation>历史记录目录 {folder} 不可写：不会保存历史记录。</translation>
    </message>
    <message>
        <source>No history yet; {folder} can be created.</source>
        <translation>还没有历史记录；可以创建 {folder}。</translation>
    </message>
    <message>
        <source>The history folder {folder} is writable.</source>
        <translation>历史记录目录 {folder} 可写。</translation>
    </message>
    <message>
        <source>No trayvml process is writing the history now.</source>
        <translation>目前没有 trayvml 进程在写入历史记录。</translation>
    </message>
    <message>
        <source>Another process is writing the history (its process id is not recorded).</source>
        <translation>另一个进程正在写入历史记录（未记录其进程号）。</translation>
    </message>
    <message>
        <source>Process {pid} (a trayvml tray app or record) is writing the history.</source>
        <translation>进程 {pid}（trayvml 托盘程序或 record）正在写入历史记录。</translation>
    </message>
    <message>
        <source>Could not write {path}: {error}.</source>
        <translation>无法写入 {path}：{error}。</translation>
    </message>
    <message>
        <source>A redacted report is in {path}; attach it to an issue.</source>
        <translation>已隐去敏感信息的报告在 {path}；请将其附在问题报告中。</translation>
    </message>
    <message>
        <source>The settings file {path} holds passwords or tokens and others can read it: chmod 600 {path}</source>
        <translation>设置文件 {path} 含有密码或令牌，且其他用户可读：chmod 600 {path}</translation>
    </message>
    <message>
        <source>A replayed recording cannot be recorded again.</source>
        <translation>回放中的记录不能再次记录。</translation>
    </message>
    <message>
        <source>Recorded {calls} NVML calls in {ticks} ticks to {path}.</source>
        <translation>已在 {ticks} 个采样周期内把 {calls} 次 NVML 调用记录到 {path}。</translation>
    </message>
    <message>
        <source>No nvidia-smi here: the recording holds NVML answers only.</source>
        <translation>此处没有 nvidia-smi：记录中只有 NVML 的应答。</translation>
    </message>
</context>
<context>
    <name>energy</name>
    <message>
        <source>{job} finished on GPU {gpu} after {duration}, {energy}.</source>
        <translation>{job} 在 GPU {gpu} 上运行 {duration} 后结束，耗电 {energy}。</translation>
    </message>
    <message>
        <source>{job} finished on GPU {gpu} after {duration}.</source>
        <translation>{job} 在 GPU {gpu} 上运行 {duration} 后结束。</translation>
    </message>
    <message>
        <source>{job} finished on GPU {gpu}.</source>
        <translation>{job} 已在 GPU {gpu} 上结束。</translation>
    </message>
    <message>
        <source>{energy} on GPU {gpu} over {duration}.</source>
        <translation>GPU {gpu} 在 {duration} 内消耗 {energy}。</translation>
    </message>
</context>
<context>
    <name>errors</name>
    <message>
        <source>No NVIDIA driver found: the NVML library (libnvidia-ml) that ships with the driver is not installed. Install the NVIDIA driver.</source>
        <translation>未找到 NVIDIA 驱动：未安装随驱动提供的 NVML 库（libnvidia-ml）。请安装 NVIDIA 驱动。</translation>
    </message>
    <message>
        <source>The NVIDIA driver is installed but not loaded: no NVIDIA kernel module is running. Check `lsmod | grep nvidia`, or reboot after installing the driver.</source>
        <translation>NVIDIA 驱动已安装但未加载：没有正在运行的 NVIDIA 内核模块。请检查 `lsmod | grep nvidia`，或在安装驱动后重启。</translation>
    </message>
    <message>
        <source>The NVIDIA driver was updated but the old kernel module is still loaded (driver/library version mismatch). Reboot to finish the update.</source>
        <translation>NVIDIA 驱动已更新，但旧的内核模块仍在运行（驱动与库版本不匹配）。请重启以完成更新。</translation>
    </message>
    <message>
        <source>No permission to open the NVIDIA device files (/dev/nvidia*). Ask an administrator to add you to the group that owns them.</source>
        <translation>没有打开 NVIDIA 设备文件（/dev/nvidia*）的权限。请让管理员将你加入拥有这些文件的用户组。</translation>
    </message>
    <message>
        <source>The NVIDIA driver is running but reports no GPUs.</source>
        <translation>NVIDIA 驱动正在运行，但未报告任何 GPU。</translation>
    </message>
    <message>
        <source>Reading the GPUs failed in trayvml itself (the details are in its log)</source>
        <translation>trayvml 自身读取 GPU 失败（详情见其日志）</translation>
    </message>
    <message>
        <source>NVML could not start</source>
        <translation>NVML 无法启动</translation>
    </message>
    <message>
        <source>No NVIDIA driver found</source>
        <translation>未找到 NVIDIA 驱动</translation>
    </message>
    <message>
        <source>NVIDIA driver not loaded</source>
        <translation>NVIDIA 驱动未加载</translation>
    </message>
    <message>
        <source>Driver updated: reboot needed</source>
        <translation>驱动已更新：需要重启</translation>
    </message>
    <message>
        <source>No permission to read the GPUs</source>
        <translation>没有读取 GPU 的权限</translation>
    </message>
    <message>
        <source>No NVIDIA GPUs found</source>
        <translation>未找到 NVIDIA GPU</translation>
    </message>
    <message>
        <source>Reading the GPUs failed</source>
        <translation>读取 GPU 失败</translation>
    </message>
    <message>
        <source>{problem}: {detail}.</source>
        <translation>{problem}：{detail}。</translation>
    </message>
    <message>
        <source>{problem} This fault is simulated, as --simulate asked.</source>
        <translation>{problem}此故障是按 --simulate 的要求模拟的。</translation>
    </message>
    <message>
        <source>{problem} Meanwhile, trayvml --simulate shows simulated GPUs.</source>
        <translation>{problem}在此期间，可用 trayvml --simulate 查看模拟 GPU。</translation>
    </message>
    <message>
        <source>GPU power state not readable</source>
        <translation>无法读取 GPU 电源状态</translation>
    </message>
    <message>
        <source>GPU driver not responding</source>
        <translation>GPU 驱动无响应</translation>
    </message>
    <message>
        <source>Reading {file} has not finished for {duration}; trayvml reads it before asking the NVIDIA driver, so no GPU values are current until it does.</source>
        <translation>读取 {file} 已 {duration} 未完成；trayvml 在询问 NVIDIA 驱动之前会先读取它，因此在读取完成之前，所有 GPU 数值都不是最新的。</translation>
    </message>
    <message>
        <source>The NVIDIA driver has not answered for {duration}, stuck in {call}; no GPU values are current until it does.</source>
        <translation>NVIDIA 驱动已 {duration} 未响应，卡在 {call}；在其响应之前，所有 GPU 数值都不是最新的。</translation>
    </message>
    <message>
        <source>The NVIDIA driver has not answered for {duration}; no GPU values are current until it does.</source>
        <translation>NVIDIA 驱动已 {duration} 未响应；在其响应之前，所有 GPU 数值都不是最新的。</translation>
    </message>
    <message>
        <source>Host unreachable</source>
        <translation>主机无法连接</translation>
    </message>
</context>
<context>
    <name>files</name>
    <message>
        <source>it is not a regular file</source>
        <translation>不是普通文件</translation>
    </message>
    <message>
        <source>its writer did not finish within {seconds} s</source>
        <translation>写入方在 {seconds} 秒内未写完</translation>
    </message>
</context>
<context>
    <name>jobs</name>
    <message>
        <source>notebook</source>
        <translation>笔记本</translation>
    </message>
    <message>
        <source>Jupyter kernel</source>
        <translation>Jupyter 内核</translation>
    </message>
    <message>
        <source>container</source>
        <translation>容器</translation>
    </message>
    <message>
        <source>Slurm job</source>
        <translation>Slurm 作业</translation>
    </message>
    <message>
        <source>systemd unit</source>
        <translation>systemd 单元</translation>
    </message>
    <message>
        <source>terminal session</source>
        <translation>终端会话</translation>
    </message>
    <message>
        <source>process tree</source>
        <translation>进程树</translation>
    </message>
    <message>
        <source>pid {pid}</source>
        <translation>PID {pid}</translation>
    </message>
</context>
<context>
    <name>jupyter</name>
    <message>
        <source>The kernel of {notebook} is already gone from its Jupyter server.</source>
        <translation>{notebook} 的内核已不在其 Jupyter 服务器上。</translation>
    </message>
    <message>
        <source>The Jupyter server at {server} refused to shut the kernel down (HTTP {code}): it does not accept the token in its runtime file.</source>
        <translation>位于 {server} 的 Jupyter 服务器拒绝关闭该内核（HTTP {code}）：它不接受其运行时文件中的令牌。</translation>
    </message>
    <message>
        <source>The Jupyter server at {server} answered HTTP {code}: the kernel was not shut down.</source>
        <translation>位于 {server} 的 Jupyter 服务器返回 HTTP {code}：内核未被关闭。</translation>
    </message>
    <message>
        <source>The Jupyter server at {server} did not answer within {seconds} s: the kernel may still run.</source>
        <translation>位于 {server} 的 Jupyter 服务器在 {seconds} 秒内未应答：内核可能仍在运行。</translation>
    </message>
    <message>
        <source>The Jupyter server at {server} no longer answers ({reason}): the kernel was not shut down.</source>
        <translation>位于 {server} 的 Jupyter 服务器已不再应答（{reason}）：内核未被关闭。</translation>
    </message>
</context>
<context>
    <name>metrics</name>
    <message>
        <source>Utilization</source>
        <translation>利用率</translation>
    </message>
    <message>
        <source>Activity</source>
        <translation>活跃度</translation>
    </message>
    <message>
        <source>Memory</source>
        <translation>显存</translation>
    </message>
    <message>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <source>Power</source>
        <translation>功耗</translation>
    </message>
    <message>
        <source>Fan</source>
        <translation>风扇</translation>
    </message>
    <message>
        <source>Clocks</source>
        <translation>时钟</translation>
    </message>
    <message>
        <source>PCIe</source>
        <translation>PCIe</translation>
    </message>
    <message>
        <source>NVLink</source>
        <translation>NVLink</translation>
    </message>
    <message>
        <source>Encoder / decoder</source>
        <translation>编码器 / 解码器</translation>
    </message>
    <message>
        <source>Errors</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>Throttle reasons</source>
        <translation>降频原因</translation>
    </message>
    <message>
        <source>Processes</source>
        <translation>进程</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>RAM and swap</source>
        <translation>内存与交换</translation>
    </message>
    <message>
        <source>Disk</source>
        <translation>磁盘</translation>
    </message>
    <message>
        <source>Network</source>
        <translation>网络</translation>
    </message>
    <message>
        <source>GPU utilization</source>
        <translation>GPU 利用率</translation>
    </message>
    <message>
        <source>Memory used</source>
        <translation>已用显存</translation>
    </message>
    <message>
        <source>Memory free</source>
        <translation>可用显存</translation>
    </message>
    <message>
        <source>Memory reserved by the driver</source>
        <translation>驱动保留显存</translation>
    </message>
    <message>
        <source>Memory used (% of total)</source>
        <translation>已用显存占比</translation>
    </message>
    <message>
        <source>GPU temperature</source>
        <translation>GPU 温度</translation>
    </message>
    <message>
        <source>Temperature below the shutdown limit</source>
        <translation>距关机温度的余量</translation>
    </message>
    <message>
        <source>Memory temperature</source>
        <translation>显存温度</translation>
    </message>
    <message>
        <source>Fan speed</source>
        <translation>风扇转速</translation>
    </message>
    <message>
        <source>Memory busy (% of time)</source>
        <translation>显存忙碌时间占比</translation>
    </message>
    <message>
        <source>Power draw</source>
        <translation>功耗</translation>
    </message>
    <message>
        <source>Power draw (instant)</source>
        <translation>功耗（瞬时）</translation>
    </message>
    <message>
        <source>Power limit</source>
        <translation>功耗上限</translation>
    </message>
    <message>
        <source>Enforced power limit</source>
        <translation>实际功耗上限</translation>
    </message>
    <message>
        <source>Power draw (% of enforced limit)</source>
        <translation>功耗占上限百分比</translation>
    </message>
    <message>
        <source>Energy since driver load</source>
        <translation>驱动加载以来的能耗</translation>
    </message>
    <message>
        <source>SM clock</source>
        <translation>SM 时钟</translation>
    </message>
    <message>
        <source>Graphics clock</source>
        <translation>图形时钟</translation>
    </message>
    <message>
        <source>Memory clock</source>
        <translation>显存时钟</translation>
    </message>
    <message>
        <source>Video clock</source>
        <translation>视频时钟</translation>
    </message>
    <message>
        <source>Performance state</source>
        <translation>性能状态</translation>
    </message>
    <message>
        <source>PCIe TX</source>
        <translation>PCIe 发送</translation>
    </message>
    <message>
        <source>PCIe RX</source>
        <translation>PCIe 接收</translation>
    </message>
    <message>
        <source>PCIe link generation</source>
        <translation>PCIe 链路代次</translation>
    </message>
    <message>
        <source>PCIe link width</source>
        <translation>PCIe 链路宽度</translation>
    </message>
    <message>
        <source>PCIe replays</source>
        <translation>PCIe 重传</translation>
    </message>
    <message>
        <source>PCIe replays per second</source>
        <translation>PCIe 每秒重传</translation>
    </message>
    <message>
        <source>NVLink TX (all links)</source>
        <translation>NVLink 发送（所有链路）</translation>
    </message>
    <message>
        <source>NVLink RX (all links)</source>
        <translation>NVLink 接收（所有链路）</translation>
    </message>
    <message>
        <source>Encoder utilization</source>
        <translation>编码器利用率</translation>
    </message>
    <message>
        <source>Decoder utilization</source>
        <translation>解码器利用率</translation>
    </message>
    <message>
        <source>ECC corrected (volatile)</source>
        <translation>ECC 已纠正（易失）</translation>
    </message>
    <message>
        <source>ECC uncorrected (volatile)</source>
        <translation>ECC 未纠正（易失）</translation>
    </message>
    <message>
        <source>ECC corrected (aggregate)</source>
        <translation>ECC 已纠正（累计）</translation>
    </message>
    <message>
        <source>ECC uncorrected (aggregate)</source>
        <translation>ECC 未纠正（累计）</translation>
    </message>
    <message>
        <source>Retired pages (single-bit)</source>
        <translation>退役页（单比特）</translation>
    </message>
    <message>
        <source>Retired pages (double-bit)</source>
        <translation>退役页（双比特）</translation>
    </message>
    <message>
        <source>Page retirement pending</source>
        <translation>页面退役待处理</translation>
    </message>
    <message>
        <source>Remapped rows (correctable)</source>
        <translation>重映射行（可纠正）</translation>
    </message>
    <message>
        <source>Remapped rows (uncorrectable)</source>
        <translation>重映射行（不可纠正）</translation>
    </message>
    <message>
        <source>Row remapping pending</source>
        <translation>行重映射待处理</translation>
    </message>
    <message>
        <source>Row remapping failed</source>
        <translation>行重映射失败</translation>
    </message>
    <message>
        <source>XID errors since start</source>
        <translation>启动以来的 XID 错误</translation>
    </message>
    <message>
        <source>Last XID</source>
        <translation>最近的 XID</translation>
    </message>
    <message>
        <source>none since start</source>
        <translation>启动以来没有</translation>
    </message>
    <message>
        <source>Clock event (throttle) reasons</source>
        <translation>时钟事件（降频）原因</translation>
    </message>
    <message>
        <source>SM activity</source>
        <translation>SM 活跃度</translation>
    </message>
    <message>
        <source>SM occupancy</source>
        <translation>SM 占用率</translation>
    </message>
    <message>
        <source>Tensor core activity</source>
        <translation>Tensor Core 活跃度</translation>
    </message>
    <message>
        <source>DRAM bandwidth utilization</source>
        <translation>DRAM 带宽利用率</translation>
    </message>
    <message>
        <source>FP64 activity</source>
        <translation>FP64 活跃度</translation>
    </message>
    <message>
        <source>FP32 activity</source>
        <translation>FP32 活跃度</translation>
    </message>
    <message>
        <source>FP16 activity</source>
        <translation>FP16 活跃度</translation>
    </message>
    <message>
        <source>PCIe TX (GPM)</source>
        <translation>PCIe 发送（GPM）</translation>
    </message>
    <message>
        <source>PCIe RX (GPM)</source>
        <translation>PCIe 接收（GPM）</translation>
    </message>
    <message>
        <source>NVLink TX (GPM)</source>
        <translation>NVLink 发送（GPM）</translation>
    </message>
    <message>
        <source>NVLink RX (GPM)</source>
        <translation>NVLink 接收（GPM）</translation>
    </message>
    <message>
        <source>RAM used</source>
        <translation>已用内存</translation>
    </message>
    <message>
        <source>RAM total</source>
        <translation>内存总量</translation>
    </message>
    <message>
        <source>Swap used</source>
        <translation>已用交换</translation>
    </message>
    <message>
        <source>Swap total</source>
        <translation>交换总量</translation>
    </message>
    <message>
        <source>Disk read</source>
        <translation>磁盘读取</translation>
    </message>
    <message>
        <source>Disk write</source>
        <translation>磁盘写入</translation>
    </message>
    <message>
        <source>Network received</source>
        <translation>网络接收</translation>
    </message>
    <message>
        <source>Network sent</source>
        <translation>网络发送</translation>
    </message>
    <message>
        <source>GPM activity metrics need a Hopper or newer data-center GPU</source>
        <translation>GPM 活跃度指标需要 Hopper 或更新架构的数据中心 GPU</translation>
    </message>
    <message>
        <source>board limit</source>
        <translation>板卡限制</translation>
    </message>
    <message>
        <source>reliability limit</source>
        <translation>可靠性限制</translation>
    </message>
    <message>
        <source>Index</source>
        <translation>索引</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>UUID</source>
        <translation>UUID</translation>
    </message>
    <message>
        <source>Serial number</source>
        <translation>序列号</translation>
    </message>
    <message>
        <source>PCI bus id</source>
        <translation>PCI 总线 ID</translation>
    </message>
    <message>
        <source>VBIOS</source>
        <translation>VBIOS</translation>
    </message>
    <message>
        <source>Compute capability</source>
        <translation>计算能力</translation>
    </message>
    <message>
        <source>Persistence mode</source>
        <translation>持久模式</translation>
    </message>
    <message>
        <source>MIG mode</source>
        <translation>MIG 模式</translation>
    </message>
    <message>
        <source>MIG mode (pending)</source>
        <translation>MIG 模式（待生效）</translation>
    </message>
    <message>
        <source>ECC mode</source>
        <translation>ECC 模式</translation>
    </message>
    <message>
        <source>Memory total</source>
        <translation>显存总量</translation>
    </message>
    <message>
        <source>Unified memory (host RAM)</source>
        <translation>统一内存（主机内存）</translation>
    </message>
    <message>
        <source>Default power limit</source>
        <translation>默认功耗上限</translation>
    </message>
    <message>
        <source>Minimum power limit</source>
        <translation>最小功耗上限</translation>
    </message>
    <message>
        <source>Maximum power limit</source>
        <translation>最大功耗上限</translation>
    </message>
    <message>
        <source>Max SM clock</source>
        <translation>最高 SM 时钟</translation>
    </message>
    <message>
        <source>Max graphics clock</source>
        <translation>最高图形时钟</translation>
    </message>
    <message>
        <source>Max memory clock</source>
        <translation>最高显存时钟</translation>
    </message>
    <message>
        <source>Max video clock</source>
        <translation>最高视频时钟</translation>
    </message>
    <message>
        <source>Max PCIe generation</source>
        <translation>最高 PCIe 代次</translation>
    </message>
    <message>
        <source>Max PCIe width</source>
        <translation>最大 PCIe 宽度</translation>
    </message>
    <message>
        <source>NVLink links</source>
        <translation>NVLink 链路数</translation>
    </message>
    <message>
        <source>idle</source>
        <translation>空闲</translation>
    </message>
    <message>
        <source>applications clocks setting</source>
        <translation>应用时钟设定</translation>
    </message>
    <message>
        <source>software power cap</source>
        <translation>软件功耗上限</translation>
    </message>
    <message>
        <source>hardware slowdown</source>
        <translation>硬件降速</translation>
    </message>
    <message>
        <source>sync boost</source>
        <translation>同步加速</translation>
    </message>
    <message>
        <source>software thermal slowdown</source>
        <translation>软件温度降速</translation>
    </message>
    <message>
        <source>hardware thermal slowdown</source>
        <translation>硬件温度降速</translation>
    </message>
    <message>
        <source>hardware power brake</source>
        <translation>硬件功耗制动</translation>
    </message>
    <message>
        <source>display clock setting</source>
        <translation>显示时钟设定</translation>
    </message>
    <message>
        <source>ok</source>
        <translation>正常</translation>
    </message>
    <message>
        <source>no data</source>
        <translation>无数据</translation>
    </message>
    <message>
        <source>not supported</source>
        <translation>不支持</translation>
    </message>
    <message>
        <source>no permission</source>
        <translation>无权限</translation>
    </message>
    <message>
        <source>GPU lost</source>
        <translation>GPU 丢失</translation>
    </message>
    <message>
        <source>not read: nothing shows it</source>
        <translation>未读取：没有界面显示它</translation>
    </message>
    <message>
        <source>asleep: runtime-suspended, not queried so that it stays asleep</source>
        <translation>休眠中：运行时挂起，不查询以免将其唤醒</translation>
    </message>
    <message>
        <source>resting: an idle laptop GPU is read slowly so that it can go to sleep</source>
        <translation>低频读取：空闲的笔记本电脑 GPU 读取得较慢，以便其进入休眠</translation>
    </message>
    <message>
        <source>at least {value}: the counter may have wrapped more than once</source>
        <translation>至少 {value}：计数器可能已回绕不止一次</translation>
    </message>
    <message>
        <source>not measured yet: a rate needs two readings</source>
        <translation>尚未测得：速率需要两次读数</translation>
    </message>
</context>
<context>
    <name>notices</name>
    <message>
        <source>Jobs on it have failed. See `dmesg` for the Xid; a reboot usually brings it back.</source>
        <translation>其上的作业已失败。请在 `dmesg` 中查看 Xid；重启通常可以恢复。</translation>
    </message>
    <message>
        <source>`dmesg` has the driver&apos;s message; NVIDIA&apos;s XID catalog says whether the GPU needs a reset.</source>
        <translation>`dmesg` 中有驱动的消息；NVIDIA 的 XID 错误列表说明了 GPU 是否需要重置。</translation>
    </message>
    <message>
        <source>Check the fans and the airflow: the GPU slows itself down near its limit and shuts down beyond it.</source>
        <translation>请检查风扇和风道：GPU 接近温度上限时会自行降速，超过上限时会关闭。</translation>
    </message>
    <message>
        <source>Clocks are held down: check the cooling (thermal) or the power limit (power).</source>
        <translation>时钟被压低：请检查散热（温度）或功耗上限（功耗）。</translation>
    </message>
    <message>
        <source>A job that allocates more will fail with out of memory.</source>
        <translation>再多分配显存的作业将因显存不足而失败。</translation>
    </message>
    <message>
        <source>Not known to be back to normal: its rule was turned off in the settings.</source>
        <translation>不确定是否已恢复正常：其规则已在设置中关闭。</translation>
    </message>
    <message>
        <source>Not known to be back to normal: the GPU is no longer there (a MIG instance destroyed, or no longer reported).</source>
        <translation>不确定是否已恢复正常：该 GPU 已不存在（MIG 实例已销毁，或不再上报）。</translation>
    </message>
    <message>
        <source>Back to normal.</source>
        <translation>已恢复正常。</translation>
    </message>
    <message>
        <source>{body}
For {duration} now.</source>
        <translation>{body}
已持续 {duration}。</translation>
    </message>
    <message>
        <source>GPUs {gpus}: {what}</source>
        <translation>GPU {gpus}：{what}</translation>
    </message>
    <message>
        <source> · </source>
        <translation> · </translation>
    </message>
    <message>
        <source>{gpus} and {count} more</source>
        <translation>{gpus}，另有 {count} 个</translation>
    </message>
    <message>
        <source>GPU {index}: {detail}</source>
        <translation>GPU {index}：{detail}</translation>
    </message>
    <message>
        <source>GPU {index} at {value}</source>
        <translation>GPU {index} 为 {value}</translation>
    </message>
    <message>
        <source>GPU {index}: {message}</source>
        <translation>GPU {index}：{message}</translation>
    </message>
    <message>
        <source>Since {time} ({duration}).</source>
        <translation>自 {time} 起（{duration}）。</translation>
    </message>
    <message>
        <source>GPUs {gpus}</source>
        <translation>GPU {gpus}</translation>
    </message>
    <message>
        <source>Back to normal after {duration}.</source>
        <translation>持续 {duration} 后已恢复正常。</translation>
    </message>
    <message>
        <source>[simulated] {title}</source>
        <translation>[模拟] {title}</translation>
    </message>
</context>
<context>
    <name>notify</name>
    <message>
        <source>Open graphs</source>
        <translation>打开图表</translation>
    </message>
    <message>
        <source>Snooze 1 h</source>
        <translation>1 小时内不再提醒</translation>
    </message>
    <message>
        <source>Shut down kernel…</source>
        <translation>关闭 Jupyter 内核…</translation>
    </message>
    <message>
        <source>To shut the kernel down, open the active alerts from the tray menu: the alert offers Shut down kernel…</source>
        <translation>要关闭 Jupyter 内核，请从托盘菜单打开活动告警：该告警提供“关闭 Jupyter 内核…”</translation>
    </message>
</context>
<context>
    <name>pick</name>
    <message>
        <source>Unknown criterion {criterion}: choose one of {choices}.</source>
        <translation>未知的排序依据 {criterion}：请从 {choices} 中选择。</translation>
    </message>
    <message>
        <source>The number of GPUs to pick must be a whole number, at least 1.</source>
        <translation>要选择的 GPU 数量必须是至少为 1 的整数。</translation>
    </message>
    <message>
        <source>The busiest a GPU may be must be from 0 to 100 %.</source>
        <translation>GPU 的最高繁忙程度必须在 0 到 100 % 之间。</translation>
    </message>
    <message>
        <source>The free memory asked for must be 0 MiB or more.</source>
        <translation>所要求的可用显存必须为 0 MiB 或以上。</translation>
    </message>
    <message>
        <source>{count} GPUs asked for, but a CUDA process sees only one MIG device (NVIDIA&apos;s MIG user guide): ask for one for each process (whole GPUs that qualify: {whole}).</source>
        <translation>请求 {count} 块 GPU，但一个 CUDA 进程只能看到一个 MIG 设备（见 NVIDIA MIG 用户指南）：请为每个进程各请求一个（符合条件的整块 GPU：{whole}）。</translation>
    </message>
    <message>
        <source>No GPU is free: all {total} are more than {percent} % busy.</source>
        <translation>没有空闲的 GPU：全部 {total} 个的忙碌程度都超过 {percent} %。</translation>
    </message>
    <message>
        <source>No GPU is free: the only one is more than {percent} % busy.</source>
        <translation>没有空闲的 GPU：唯一的 GPU 忙碌程度超过 {percent} %。</translation>
    </message>
    <message>
        <source> with at least {mib} MiB free and at most {percent} % busy</source>
        <translation>（至少 {mib} MiB 可用显存，且忙碌程度不超过 {percent} %）</translation>
    </message>
    <message>
        <source> with at least {mib} MiB free</source>
        <translation>（至少 {mib} MiB 可用显存）</translation>
    </message>
    <message>
        <source> at most {percent} % busy</source>
        <translation>（忙碌程度不超过 {percent} %）</translation>
    </message>
    <message>
        <source> ({lost} lost)</source>
        <translation>（{lost} 个已丢失）</translation>
    </message>
    <message>
        <source>1 GPU asked for, but only {qualifying} of {total}{lost} qualify{condition}.</source>
        <translation>需要 1 个 GPU，但 {total} 个{lost}中只有 {qualifying} 个符合条件{condition}。</translation>
    </message>
    <message>
        <source>{count} GPUs asked for, but only 1 of {total}{lost} qualifies{condition}.</source>
        <translation>需要 {count} 个 GPU，但 {total} 个{lost}中只有 1 个符合条件{condition}。</translation>
    </message>
    <message>
        <source>{count} GPUs asked for, but only {qualifying} of {total}{lost} qualify{condition}.</source>
        <translation>需要 {count} 个 GPU，但 {total} 个{lost}中只有 {qualifying} 个符合条件{condition}。</translation>
    </message>
    <message>
        <source>CUDA_VISIBLE_DEVICES={value} names GPUs by CUDA&apos;s index, which is NVML&apos;s only with CUDA_DEVICE_ORDER=PCI_BUS_ID on a machine of more than one GPU model: set that, or name the GPUs by UUID.</source>
        <translation>CUDA_VISIBLE_DEVICES={value} 按 CUDA 的序号指定 GPU；在有多种型号 GPU 的机器上，只有设置 CUDA_DEVICE_ORDER=PCI_BUS_ID 时它才与 NVML 的序号一致：请设置它，或用 UUID 指定 GPU。</translation>
    </message>
    <message>
        <source>CUDA_VISIBLE_DEVICES={value} lets CUDA see none of this machine&apos;s GPUs: unset it to choose among all.</source>
        <translation>CUDA_VISIBLE_DEVICES={value} 使 CUDA 看不到本机的任何 GPU：取消设置它即可在所有 GPU 中选择。</translation>
    </message>
    <message>
        <source>GPU {index}&apos;s UUID is not known yet (it has slept since the driver was opened): pick by index.</source>
        <translation>GPU {index} 的 UUID 尚不可知（自驱动打开以来一直处于休眠状态）：请按索引选择。</translation>
    </message>
    <message>
        <source>visible_gpus is in use in another thread: CUDA_VISIBLE_DEVICES is one for the whole process.</source>
        <translation>visible_gpus 正在另一个线程中使用：CUDA_VISIBLE_DEVICES 是整个进程共用的。</translation>
    </message>
    <message>
        <source>{sentence}, among the GPUs CUDA_VISIBLE_DEVICES names ({indices}).</source>
        <translation>{sentence}（在 CUDA_VISIBLE_DEVICES 指定的 GPU {indices} 中）。</translation>
    </message>
    <message>
        <source>chosen among the GPUs CUDA_VISIBLE_DEVICES names ({indices}).</source>
        <translation>在 CUDA_VISIBLE_DEVICES 指定的 GPU（{indices}）中选择。</translation>
    </message>
</context>
<context>
    <name>processes</name>
    <message>
        <source>1 process of another user</source>
        <translation>1 个其他用户的进程</translation>
    </message>
    <message>
        <source>{count} processes of other users</source>
        <translation>{count} 个其他用户的进程</translation>
    </message>
    <message>
        <source>1 process in another PID namespace</source>
        <translation>1 个位于其他 PID 命名空间的进程</translation>
    </message>
    <message>
        <source>{count} processes in another PID namespace</source>
        <translation>{count} 个位于其他 PID 命名空间的进程</translation>
    </message>
    <message>
        <source>; </source>
        <translation>；</translation>
    </message>
</context>
<context>
    <name>push</name>
    <message>
        <source>it answered HTTP {code} {reason}, to {location}: give that address instead</source>
        <translation>它返回了 HTTP {code} {reason}，指向 {location}：请改用该地址</translation>
    </message>
    <message>
        <source>it answered HTTP {code} {reason}</source>
        <translation>它返回了 HTTP {code} {reason}</translation>
    </message>
    <message>
        <source>the SMTP server refused the user name and password</source>
        <translation>SMTP 服务器拒绝了该用户名和密码</translation>
    </message>
    <message>
        <source>the SMTP server refused {addresses}</source>
        <translation>SMTP 服务器拒绝了 {addresses}</translation>
    </message>
    <message>
        <source>[simulated] {title}</source>
        <translation>[模拟] {title}</translation>
    </message>
    <message>
        <source>Alerts could not be pushed to {name}: {reason}</source>
        <translation>无法将告警推送到 {name}：{reason}</translation>
    </message>
    <message>
        <source>it did not answer within {seconds:g} s</source>
        <translation>它在 {seconds:g} 秒内未应答</translation>
    </message>
</context>
<context>
    <name>reader</name>
    <message>
        <source>NVML stopped answering ({why}); retrying every {period} s</source>
        <translation>NVML 停止响应（{why}）；每 {period} 秒重试一次</translation>
    </message>
    <message>
        <source>GPU {index} has fallen off the bus; the other GPUs carry on</source>
        <translation>GPU {index} 已从总线上掉线；其他 GPU 继续工作</translation>
    </message>
</context>
<context>
    <name>record</name>
    <message>
        <source>trayvml: recording to {folder} every {seconds} s</source>
        <translation>trayvml：每 {seconds} 秒记录一次，写入 {folder}</translation>
    </message>
    <message>
        <source>trayvml: {problem} (the host is still recorded)</source>
        <translation>trayvml：{problem}（仍在记录主机数据）</translation>
    </message>
    <message>
        <source>trayvml: the GPUs answer again.</source>
        <translation>trayvml：GPU 已重新应答。</translation>
    </message>
    <message>
        <source>{saved} of {count} samples recorded; the rest could not be written ({problem})</source>
        <translation>已记录 {count} 个样本中的 {saved} 个；其余无法写入（{problem}）</translation>
    </message>
    <message>
        <source>the store was not writable</source>
        <translation>历史存储不可写</translation>
    </message>
    <message>
        <source>trayvml: {count} samples recorded</source>
        <translation>trayvml：已记录 {count} 个样本</translation>
    </message>
    <message>
        <source>trayvml: {count} sample recorded</source>
        <translation>trayvml：已记录 {count} 个样本</translation>
    </message>
    <message>
        <source>{value} is not a date and time such as {example}.</source>
        <translation>{value} 不是日期和时间，应类似 {example}。</translation>
    </message>
    <message>
        <source>{value} is not a time trayvml can work with; give one after 1970.</source>
        <translation>{value} 不是 trayvml 能处理的时间；请给出 1970 年之后的时间。</translation>
    </message>
    <message>
        <source>--since {value} is not a length of time such as 90m, 2h or 3d.</source>
        <translation>--since {value} 不是时长，应类似 90m、2h 或 3d。</translation>
    </message>
    <message>
        <source>--since {value} reaches back before 1970; the history holds nothing that old.</source>
        <translation>--since {value} 早于 1970 年；历史中没有那么早的数据。</translation>
    </message>
    <message>
        <source>--to needs --from.</source>
        <translation>--to 需要与 --from 一起使用。</translation>
    </message>
    <message>
        <source>--from {value} is in the future; the history holds nothing after now.</source>
        <translation>--from {value} 在未来；历史记录中没有晚于现在的数据。</translation>
    </message>
    <message>
        <source>--to is before --from.</source>
        <translation>--to 早于 --from。</translation>
    </message>
    <message>
        <source>Cannot read the history in {folder}: {error}.</source>
        <translation>无法读取 {folder} 中的历史记录：{error}。</translation>
    </message>
    <message>
        <source>No history in {folder} yet: the tray app or `trayvml record` writes it.</source>
        <translation>{folder} 中还没有历史记录：托盘程序或 `trayvml record` 会写入它。</translation>
    </message>
    <message>
        <source>trayvml: before {time} the history keeps one row a minute: such a row has an interval of 60 s, the minute&apos;s mean in each column and its lowest and highest in the .min and .max columns.</source>
        <translation>trayvml：{time} 之前的历史每分钟只保留一行：这样的行间隔为 60 秒，各列为该分钟的平均值，.min 和 .max 列为其最低值和最高值。</translation>
    </message>
    <message>
        <source>trayvml: {count} rows written to {path}</source>
        <translation>trayvml：已将 {count} 行写入 {path}</translation>
    </message>
    <message>
        <source>trayvml: {count} row written to {path}</source>
        <translation>trayvml：已将 {count} 行写入 {path}</translation>
    </message>
    <message>
        <source>--query names GPU fields; --processes has columns of its own.</source>
        <translation>--query 指定的是 GPU 字段；--processes 有自己的列。</translation>
    </message>
    <message>
        <source>--store wants the folder that holds {file}: {folder}</source>
        <translation>--store 需要存放 {file} 的文件夹：{folder}</translation>
    </message>
    <message>
        <source>--store wants a folder; {path} is a file.</source>
        <translation>--store 需要一个文件夹；{path} 是一个文件。</translation>
    </message>
    <message>
        <source>No GPU processes stored between {start} and {end} in {folder}.</source>
        <translation>{folder} 中在 {start} 到 {end} 之间没有存储 GPU 进程。</translation>
    </message>
    <message>
        <source>trayvml: rows with an interval of 60 s are a minute&apos;s means: older process history keeps one row a minute.</source>
        <translation>trayvml：间隔为 60 秒的行是一分钟的平均值：较早的进程历史每分钟只保留一行。</translation>
    </message>
    <message>
        <source>No history between {start} and {end} in {folder}</source>
        <translation>{folder} 中没有 {start} 到 {end} 之间的历史</translation>
    </message>
    <message>
        <source> (it holds {first} to {last}, with gaps where nothing was recording)</source>
        <translation>（其中保存的是 {first} 到 {last} 的数据，未在记录的时段为空缺）</translation>
    </message>
    <message>
        <source>The history in {folder} has a damaged entry for GPU {uuid}; it is written anew when that GPU is next recorded.</source>
        <translation>{folder} 中的历史里 GPU {uuid} 的条目已损坏；下次记录该 GPU 时会重新写入。</translation>
    </message>
    <message>
        <source>No GPU with index {index} in the history in {folder}; it holds GPUs {indices}.</source>
        <translation>{folder} 中的历史没有索引为 {index} 的 GPU；其中有 GPU {indices}。</translation>
    </message>
    <message>
        <source>standard output</source>
        <translation>标准输出</translation>
    </message>
    <message>
        <source>record keeps the history by the settings&apos; limits, and those are not known: mend {path} first.</source>
        <translation>record 按设置中的上限保存历史记录，而这些上限现在无从得知：请先修正 {path}。</translation>
    </message>
    <message>
        <source>Cannot write {path}: {error}.</source>
        <translation>无法写入 {path}：{error}。</translation>
    </message>
    <message>
        <source>{count} GPUs and the host</source>
        <translation>{count} 个 GPU 和主机</translation>
    </message>
    <message>
        <source>{count} GPU and the host</source>
        <translation>{count} 个 GPU 和主机</translation>
    </message>
    <message>
        <source>store:</source>
        <translation>存储：</translation>
    </message>
    <message>
        <source>from:</source>
        <translation>起始：</translation>
    </message>
    <message>
        <source>to:</source>
        <translation>结束：</translation>
    </message>
    <message>
        <source>span:</source>
        <translation>跨度：</translation>
    </message>
    <message>
        <source>devices:</source>
        <translation>设备：</translation>
    </message>
    <message>
        <source>samples:</source>
        <translation>样本数：</translation>
    </message>
    <message>
        <source>bytes on disk:</source>
        <translation>磁盘字节数：</translation>
    </message>
    <message>
        <source>bytes per sample:</source>
        <translation>每样本字节数：</translation>
    </message>
</context>
<context>
    <name>remote</name>
    <message>
        <source>trayvml: settings, remote_hosts: {error}</source>
        <translation>trayvml：设置中的 remote_hosts：{error}</translation>
    </message>
    <message>
        <source>{host}: unreachable: {fault}</source>
        <translation>{host}：无法连接：{fault}</translation>
    </message>
    <message>
        <source>{host}: unreachable (since {time}, {duration}): {fault}</source>
        <translation>{host}：无法连接（自 {time} 起，{duration}）：{fault}</translation>
    </message>
    <message>
        <source>({origin})</source>
        <translation>（{origin}）</translation>
    </message>
    <message>
        <source>trayvml: No local GPU values: {problem}</source>
        <translation>trayvml：没有本机 GPU 数值：{problem}</translation>
    </message>
    <message>
        <source>trayvml: {problem} (no rows for {host} until it answers)</source>
        <translation>trayvml：{problem}（在 {host} 响应之前不为其写入数据行）</translation>
    </message>
    <message>
        <source>trayvml: {host} answers again</source>
        <translation>trayvml：{host} 已恢复响应</translation>
    </message>
    <message>
        <source>trayvml: {host} serves {simulation}, not real hardware</source>
        <translation>trayvml：{host} 提供的是{simulation}，并非真实硬件</translation>
    </message>
    <message>
        <source>{host} ({url}) GPU {index}</source>
        <translation>{host}（{url}）GPU {index}</translation>
    </message>
    <message>
        <source>the server has no new values of it</source>
        <translation>服务器没有它的新数值</translation>
    </message>
    <message>
        <source>this machine</source>
        <translation>本机</translation>
    </message>
    <message>
        <source>trayvml: {count} ticks logged to {path}</source>
        <translation>trayvml：已记录 {count} 次采样到 {path}</translation>
    </message>
    <message>
        <source>trayvml: {count} tick logged to {path}</source>
        <translation>trayvml：已记录 {count} 次采样到 {path}</translation>
    </message>
    <message>
        <source>{url}: {host}&apos;s exporter has not read its GPUs yet.</source>
        <translation>{url}：{host} 的 exporter 尚未读取其 GPU。</translation>
    </message>
    <message>
        <source>{url}: {host}&apos;s exporter says its GPU driver is not usable ({reason}).</source>
        <translation>{url}：{host} 的 exporter 报告其 GPU 驱动不可用（{reason}）。</translation>
    </message>
    <message>
        <source>Remote {url} is not a URL: {error}.</source>
        <translation>远程地址 {url} 不是 URL：{error}。</translation>
    </message>
    <message>
        <source>Remote {url} has credentials in it: put them in the settings file (remote_hosts), where other users cannot read them in the process list.</source>
        <translation>远程地址 {url} 中含有凭据：请将其写入设置文件（remote_hosts），这样其他用户无法在进程列表中看到它们。</translation>
    </message>
    <message>
        <source>{url} sent more than {mib} MiB: not a scrape.</source>
        <translation>{url} 发送了超过 {mib} MiB 的数据：这不是一次指标抓取。</translation>
    </message>
    <message>
        <source>{url} did not finish answering within {seconds} s.</source>
        <translation>{url} 未在 {seconds} 秒内完成响应。</translation>
    </message>
    <message>
        <source>Remote {url} is not an http(s):// exporter URL, a prometheus+http(s):// server URL or an ssh://[user@]host[:port] address.</source>
        <translation>远程地址 {url} 既不是 http(s):// exporter URL，也不是 prometheus+http(s):// 服务器 URL 或 ssh://[user@]host[:port] 地址。</translation>
    </message>
    <message>
        <source>Remote {url} is not an ssh://[user@]host[:port] address.</source>
        <translation>远程地址 {url} 不是 ssh://[user@]host[:port] 地址。</translation>
    </message>
    <message>
        <source>Remote {url} has a password in it: trayvml logs in over SSH with a key or the SSH agent only.</source>
        <translation>远程地址 {url} 中含有密码：trayvml 只通过密钥或 SSH 代理登录 SSH。</translation>
    </message>
    <message>
        <source>{url} answered HTTP {code} {reason} (check the user and password in the settings file).</source>
        <translation>{url} 返回 HTTP {code} {reason}（请检查设置文件中的用户名和密码）。</translation>
    </message>
    <message>
        <source>{url} answered HTTP {code} {reason}.</source>
        <translation>{url} 返回 HTTP {code} {reason}。</translation>
    </message>
    <message>
        <source>{url}: the TLS connection failed ({reason}).</source>
        <translation>{url}：TLS 连接失败（{reason}）。</translation>
    </message>
    <message>
        <source>{url} cannot be reached: {reason}.</source>
        <translation>无法连接 {url}：{reason}。</translation>
    </message>
    <message>
        <source>{url} broke off: {reason}.</source>
        <translation>{url} 连接中断：{reason}。</translation>
    </message>
    <message>
        <source>{url} gets no new samples of {host}: its exporter or its scrape has stopped.</source>
        <translation>{url} 不再收到 {host} 的新样本：它的 exporter 或对它的抓取已停止。</translation>
    </message>
    <message>
        <source>{url} did not answer within {seconds} s.</source>
        <translation>{url} 未在 {seconds} 秒内响应。</translation>
    </message>
    <message>
        <source>{url} returned a web page, not Prometheus metrics: is it the /metrics address?</source>
        <translation>{url} 返回的是网页，不是 Prometheus 指标：这是 /metrics 地址吗？</translation>
    </message>
    <message>
        <source>{url} returned something that is not Prometheus metrics ({error}).</source>
        <translation>{url} 返回的内容不是 Prometheus 指标（{error}）。</translation>
    </message>
    <message>
        <source>{url} serves Prometheus metrics, but none from a GPU exporter trayvml knows (trayvml serve, dcgm-exporter, nvidia_gpu_exporter, nvitop-exporter).</source>
        <translation>{url} 提供 Prometheus 指标，但没有来自 trayvml 所知的 GPU exporter（trayvml serve、dcgm-exporter、nvidia_gpu_exporter、nvitop-exporter）的指标。</translation>
    </message>
    <message>
        <source>{url} reports {count} GPUs on {host}; trayvml reads at most {limit} a host.</source>
        <translation>{url} 报告 {host} 上有 {count} 个 GPU；trayvml 每台主机最多读取 {limit} 个。</translation>
    </message>
    <message>
        <source>{count} remote hosts are listed; trayvml reads the first {limit} and leaves out the rest.</source>
        <translation>列出了 {count} 台远程主机；trayvml 只读取前 {limit} 台，其余的不读取。</translation>
    </message>
    <message>
        <source>{url} refused the query: {reason}.</source>
        <translation>{url} 拒绝了查询：{reason}。</translation>
    </message>
    <message>
        <source>no reason given</source>
        <translation>未给出原因</translation>
    </message>
    <message>
        <source>{url} holds no current GPU series matching {query}.</source>
        <translation>{url} 中没有与 {query} 匹配的当前 GPU 时间序列。</translation>
    </message>
    <message>
        <source>{url} did not answer as a Prometheus server ({error}).</source>
        <translation>{url} 的响应不像 Prometheus 服务器（{error}）。</translation>
    </message>
    <message>
        <source>{url}: reading it failed in trayvml itself ({error}).</source>
        <translation>{url}：trayvml 自身读取它时失败（{error}）。</translation>
    </message>
    <message>
        <source>{url}: the host&apos;s key is not known (or has changed): connect once with ssh yourself to check and accept it.</source>
        <translation>{url}：主机密钥未知（或已更改）：请先自行用 ssh 连接一次，核对并接受该密钥。</translation>
    </message>
    <message>
        <source>{url}: SSH login failed (permission denied): trayvml logs in with a key or the SSH agent only, never a password.</source>
        <translation>{url}：SSH 登录失败（权限被拒绝）：trayvml 只用密钥或 SSH 代理登录，从不使用密码。</translation>
    </message>
    <message>
        <source>{url}: nvidia-smi is not installed there (command not found).</source>
        <translation>{url}：该主机上没有安装 nvidia-smi（找不到命令）。</translation>
    </message>
    <message>
        <source>{url}: SSH could not connect: {reason}.</source>
        <translation>{url}：SSH 无法连接：{reason}。</translation>
    </message>
    <message>
        <source>{url}: the SSH session ended (exit status {code}){reason}.</source>
        <translation>{url}：SSH 会话已结束（退出状态 {code}）{reason}。</translation>
    </message>
    <message>
        <source>{url}: nvidia-smi answered something trayvml cannot read: {line}</source>
        <translation>{url}：nvidia-smi 的回答 trayvml 无法读取：{line}</translation>
    </message>
    <message>
        <source>{url}: {host}: {reason}</source>
        <translation>{url}：{host}：{reason}</translation>
    </message>
    <message>
        <source>{url}: the host answered something trayvml cannot read ({error}).</source>
        <translation>{url}：主机的回答 trayvml 无法读取（{error}）。</translation>
    </message>
    <message>
        <source>{url}: nvidia-smi says: {message}</source>
        <translation>{url}：nvidia-smi 报告：{message}</translation>
    </message>
    <message>
        <source>{url}: the host&apos;s snapshot is larger than {size} MiB.</source>
        <translation>{url}：该主机的快照大于 {size} MiB。</translation>
    </message>
    <message>
        <source>{url}: closed.</source>
        <translation>{url}：已关闭。</translation>
    </message>
    <message>
        <source>{url}: the ssh client cannot be started: {reason}.</source>
        <translation>{url}：无法启动 ssh 客户端：{reason}。</translation>
    </message>
    <message>
        <source>{url} sent nothing new for {seconds} s.</source>
        <translation>{url} 已有 {seconds} 秒没有发送新数据。</translation>
    </message>
    <message>
        <source>{url}: the SSH session ended.</source>
        <translation>{url}：SSH 会话已结束。</translation>
    </message>
    <message>
        <source>from {kind} at {url}, unchanged for {age} s</source>
        <translation>来自 {url} 上的 {kind}，已 {age} 秒未变</translation>
    </message>
    <message>
        <source>from {kind} via {url}, as of {age} s ago</source>
        <translation>来自 {kind}，经由 {url}，截至 {age} 秒前</translation>
    </message>
    <message>
        <source>from {kind} via {url}</source>
        <translation>来自 {kind}，经由 {url}</translation>
    </message>
    <message>
        <source>from {kind} at {url}</source>
        <translation>来自 {url} 上的 {kind}</translation>
    </message>
</context>
<context>
    <name>report</name>
    <message>
        <source>SIMULATED: simulated GPUs ({scenario}), not real hardware</source>
        <translation>模拟：模拟 GPU（{scenario}），并非真实硬件</translation>
    </message>
    <message>
        <source>(hidden)</source>
        <translation>（隐藏）</translation>
    </message>
    <message>
        <source>driver {version}</source>
        <translation>驱动 {version}</translation>
    </message>
    <message>
        <source>GPU lost: it has fallen off the bus</source>
        <translation>GPU 丢失：已从总线上掉线</translation>
    </message>
    <message>
        <source>asleep (runtime-suspended): not queried</source>
        <translation>休眠中（运行时挂起）：未查询</translation>
    </message>
    <message>
        <source>no new values for {age} s</source>
        <translation>已 {age} 秒无新数值</translation>
    </message>
    <message>
        <source>+{count} hidden</source>
        <translation>另有 {count} 个隐藏</translation>
    </message>
    <message>
        <source>fan {speed}</source>
        <translation>风扇 {speed}</translation>
    </message>
    <message>
        <source>host: CPU {cpu} · RAM {ram_used} / {ram_total} · swap {swap_used} / {swap_total} · disk read {disk_read} write {disk_write} · net rx {net_rx} tx {net_tx}</source>
        <translation>主机：CPU {cpu} · 内存 {ram_used} / {ram_total} · 交换 {swap_used} / {swap_total} · 磁盘 读 {disk_read} 写 {disk_write} · 网络 收 {net_rx} 发 {net_tx}</translation>
    </message>
    <message>
        <source>note: {note}</source>
        <translation>注意：{note}</translation>
    </message>
</context>
<context>
    <name>serve</name>
    <message>
        <source>--listen {value}: an IPv6 address goes in brackets, as [::1]:8729.</source>
        <translation>--listen {value}：IPv6 地址须写在方括号中，如 [::1]:8729。</translation>
    </message>
    <message>
        <source>--listen {value}: the port must be a number from 0 to 65535.</source>
        <translation>--listen {value}：端口必须是 0 到 65535 之间的数字。</translation>
    </message>
    <message>
        <source>The web config file {path} is larger than {size} MiB.</source>
        <translation>web 配置文件 {path} 大于 {size} MiB。</translation>
    </message>
    <message>
        <source>The web config pipe {path} gave nothing; its writer may have failed.</source>
        <translation>web 配置管道 {path} 没有给出任何内容；其写入方可能已失败。</translation>
    </message>
    <message>
        <source>Cannot read the web config file {path}: {error}.</source>
        <translation>无法读取 web 配置文件 {path}：{error}。</translation>
    </message>
    <message>
        <source>The web config file {path} is not UTF-8 text (byte {at}).</source>
        <translation>web 配置文件 {path} 不是 UTF-8 文本（第 {at} 个字节）。</translation>
    </message>
    <message>
        <source>The web config file {path} is not valid YAML at line {line}: {problem}.</source>
        <translation>web 配置文件 {path} 第 {line} 行不是有效的 YAML：{problem}。</translation>
    </message>
    <message>
        <source>The web config file {path} is not valid YAML: {problem}.</source>
        <translation>web 配置文件 {path} 不是有效的 YAML：{problem}。</translation>
    </message>
    <message>
        <source>The web config file {path} must be a mapping (tls_server_config, basic_auth_users).</source>
        <translation>web 配置文件 {path} 必须是映射（tls_server_config、basic_auth_users）。</translation>
    </message>
    <message>
        <source>The web config file {path} has keys trayvml does not know: {keys}.</source>
        <translation>web 配置文件 {path} 中有 trayvml 不认识的键：{keys}。</translation>
    </message>
    <message>
        <source>The web config file {path}: tls_server_config and basic_auth_users must be mappings.</source>
        <translation>web 配置文件 {path}：tls_server_config 和 basic_auth_users 必须是映射。</translation>
    </message>
    <message>
        <source>The web config file {path}: TLS needs both cert_file and key_file.</source>
        <translation>web 配置文件 {path}：TLS 需要同时提供 cert_file 和 key_file。</translation>
    </message>
    <message>
        <source>The web config file {path}: the password of {user} must be a bcrypt hash.</source>
        <translation>web 配置文件 {path}：{user} 的密码必须是 bcrypt 哈希。</translation>
    </message>
    <message>
        <source>Cannot listen on {address}: {error}.</source>
        <translation>无法在 {address} 上监听：{error}。</translation>
    </message>
    <message>
        <source>Cannot load the TLS certificate {path} or its key: {error}.</source>
        <translation>无法加载 TLS 证书 {path} 或其密钥：{error}。</translation>
    </message>
    <message>
        <source>trayvml: warning: serving on {host}, reachable from other machines; basic auth is on.</source>
        <translation>trayvml：警告：正在 {host} 上提供服务，其他机器可以访问；已启用基本认证。</translation>
    </message>
    <message>
        <source>trayvml: warning: serving on {host}, reachable from other machines; anyone who can reach it can read your GPUs&apos; metrics.</source>
        <translation>trayvml：警告：正在 {host} 上提供服务，其他机器可以访问；任何能访问它的人都能读取你的 GPU 指标。</translation>
    </message>
    <message>
        <source>trayvml: serving {url}</source>
        <translation>trayvml：正在提供 {url}</translation>
    </message>
</context>
<context>
    <name>settings</name>
    <message>
        <source>Sampling interval (s)</source>
        <translation>采样间隔（秒）</translation>
    </message>
    <message>
        <source>History length (h)</source>
        <translation>历史长度（小时）</translation>
    </message>
    <message>
        <source>How far back the graphs reach.</source>
        <translation>图表可回看的时长。</translation>
    </message>
    <message>
        <source>Tray icon shows</source>
        <translation>托盘图标显示</translation>
    </message>
    <message>
        <source>Desktop notifications</source>
        <translation>桌面通知</translation>
    </message>
    <message>
        <source>Alerts still show in the window.</source>
        <translation>告警仍会显示在窗口中。</translation>
    </message>
    <message>
        <source>Start at login</source>
        <translation>登录时启动</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <source>The language of trayvml&apos;s menus, windows and messages; system: the desktop&apos;s. Takes effect at the next start.</source>
        <translation>trayvml 菜单、窗口和消息使用的语言；跟随系统：使用桌面的语言。下次启动时生效。</translation>
    </message>
    <message>
        <source>Read idle laptop GPUs every (s)</source>
        <translation>空闲笔记本电脑 GPU 读取间隔（秒）</translation>
    </message>
    <message>
        <source>An idle laptop GPU is read this seldom, NVML let go in between, so that it can go to sleep (an open NVML handle keeps it awake, 5-25 W). 0: at the sampling interval.</source>
        <translation>空闲的笔记本电脑 GPU 按此间隔读取，其间释放 NVML，以便 GPU 进入休眠（打开的 NVML 句柄会让它保持唤醒，耗电 5-25 W）。0：按采样间隔读取。</translation>
    </message>
    <message>
        <source>Keep history on disk</source>
        <translation>在磁盘上保存历史记录</translation>
    </message>
    <message>
        <source>In your state folder; trayvml record writes the same.</source>
        <translation>保存在你的状态目录中；trayvml record 写入的也是同一份。</translation>
    </message>
    <message>
        <source>Per-second history on disk (h)</source>
        <translation>磁盘上逐秒历史的保存时长（小时）</translation>
    </message>
    <message>
        <source>Per-minute history on disk (days)</source>
        <translation>磁盘上逐分钟历史的保存时长（天）</translation>
    </message>
    <message>
        <source>History size cap (MiB)</source>
        <translation>历史记录大小上限（MiB）</translation>
    </message>
    <message>
        <source>Serve metrics to Prometheus</source>
        <translation>向 Prometheus 提供指标</translation>
    </message>
    <message>
        <source>Serve the GPUs&apos; metrics on http://127.0.0.1:8729/metrics, as `trayvml serve` does.</source>
        <translation>在 http://127.0.0.1:8729/metrics 上提供 GPU 指标，与 `trayvml serve` 相同。</translation>
    </message>
    <message>
        <source>url should be an http:// or https:// URL without spaces</source>
        <translation>url 应为不含空格的 http:// 或 https:// 网址</translation>
    </message>
    <message>
        <source>{setting}: {value} is not one of {choices}.</source>
        <translation>{setting}：{value} 不是 {choices} 之一。</translation>
    </message>
    <message>
        <source>{setting}: {value} is outside {minimum}–{maximum}.</source>
        <translation>{setting}：{value} 超出 {minimum}–{maximum} 的范围。</translation>
    </message>
    <message>
        <source>GPU {gpu}: {problem}</source>
        <translation>GPU {gpu}：{problem}</translation>
    </message>
    <message>
        <source>{key} should be a table, not {value}</source>
        <translation>{key} 应为表（table），而不是 {value}</translation>
    </message>
    <message>
        <source>{key} should be {kind}, not {value}</source>
        <translation>{key} 应为{kind}，而不是 {value}</translation>
    </message>
    <message>
        <source>{key} should be true or false</source>
        <translation>{key} 应为 true 或 false</translation>
    </message>
    <message>
        <source>{key} should be a number</source>
        <translation>{key} 应为数字</translation>
    </message>
    <message>
        <source>How often this computer&apos;s GPUs are read (remote hosts: on the Remote hosts page). NVML refreshes utilization about once a second.</source>
        <translation>读取本机 GPU 的频率（远程主机：在“远程主机”页设置）。NVML 大约每秒刷新一次利用率。</translation>
    </message>
    <message>
        <source>GPU processes kept on disk per GPU</source>
        <translation>每个 GPU 在磁盘上保留的进程数</translation>
    </message>
    <message>
        <source>The history on disk keeps the memory and SM share over time of this many processes of each GPU, the biggest ones. 0: none, and the tray reads no process lists for it.</source>
        <translation>磁盘上的历史记录保留每个 GPU 这么多个进程（最大的那些）随时间变化的显存和 SM 占比。0：不保留，托盘也不会为此读取进程列表。</translation>
    </message>
    <message>
        <source>Read remote hosts every (s)</source>
        <translation>远程主机读取间隔（秒）</translation>
    </message>
    <message>
        <source>How often each remote host is read; its graphs have a point this often. Each read costs this computer and the host: a host whose exporter reads its GPUs when asked (trayvml serve) reads them each time.</source>
        <translation>每台远程主机多久读取一次；其图表也按此间隔取点。每次读取都会占用本机和该主机的资源：在被询问时才读取 GPU 的 exporter（trayvml serve）每次都会读取一遍。</translation>
    </message>
    <message>
        <source>{where}: {problem}</source>
        <translation>{where}：{problem}</translation>
    </message>
    <message>
        <source>kind should be one of {choices}</source>
        <translation>kind 应为以下之一：{choices}</translation>
    </message>
    <message>
        <source>an e-mail destination needs smtp_host</source>
        <translation>电子邮件推送目标需要 smtp_host</translation>
    </message>
    <message>
        <source>an e-mail destination needs sender and to</source>
        <translation>电子邮件推送目标需要 sender 和 to</translation>
    </message>
    <message>
        <source>security should be one of {choices}</source>
        <translation>security 应为以下之一：{choices}</translation>
    </message>
    <message>
        <source>smtp_port should be 0–65535</source>
        <translation>smtp_port 应在 0–65535 之间</translation>
    </message>
    <message>
        <source>{rule} is not an alert rule</source>
        <translation>{rule} 不是告警规则</translation>
    </message>
    <message>
        <source>severities should be among {choices}</source>
        <translation>severities 应取自 {choices}</translation>
    </message>
    <message>
        <source>quiet_hours should look like 22:00-07:00</source>
        <translation>quiet_hours 的格式应类似 22:00-07:00</translation>
    </message>
    <message>
        <source>push should be a list of [[push]] tables</source>
        <translation>push 应为 [[push]] 表的列表</translation>
    </message>
    <message>
        <source>{key} is not a setting of a push destination</source>
        <translation>{key} 不是推送目标的设置项</translation>
    </message>
    <message>
        <source>{key} is missing</source>
        <translation>缺少 {key}</translation>
    </message>
    <message>
        <source>{key} should be text</source>
        <translation>{key} 应为文本</translation>
    </message>
    <message>
        <source>{key} should be a list of text</source>
        <translation>{key} 应为文本列表</translation>
    </message>
    <message>
        <source>a number</source>
        <translation>数字</translation>
    </message>
    <message>
        <source>a whole number</source>
        <translation>整数</translation>
    </message>
    <message>
        <source>text</source>
        <translation>文本</translation>
    </message>
    <message>
        <source>true or false</source>
        <translation>true 或 false</translation>
    </message>
    <message>
        <source>{key} should be a finite number of seconds</source>
        <translation>{key} 应为有限的秒数</translation>
    </message>
    <message>
        <source>{key} should be a table</source>
        <translation>{key} 应为表（table）</translation>
    </message>
    <message>
        <source>{old} is now {new}</source>
        <translation>{old} 现已改为 {new}</translation>
    </message>
    <message>
        <source>{old} is no longer used</source>
        <translation>{old} 已不再使用</translation>
    </message>
    <message>
        <source>{table} held the former default and now has today&apos;s ({default})</source>
        <translation>{table} 原为旧的默认值，现改用当前默认值（{default}）</translation>
    </message>
    <message>
        <source>on</source>
        <translation>开启</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <source>it is not valid TOML ({error})</source>
        <translation>它不是有效的 TOML（{error}）</translation>
    </message>
    <message>
        <source>it holds a number too long to be a setting</source>
        <translation>其中的数字过长，不可能是设置值</translation>
    </message>
    <message>
        <source>it is nested too deeply to be a settings file</source>
        <translation>嵌套层级过深，不可能是设置文件</translation>
    </message>
    <message>
        <source>version should be a whole number, not {value}</source>
        <translation>version 应为整数，而不是 {value}</translation>
    </message>
    <message>
        <source>it was written by a newer trayvml (settings version {version}; this one knows {known})</source>
        <translation>它由更新版本的 trayvml 写入（设置版本 {version}；当前版本只认识 {known}）</translation>
    </message>
    <message>
        <source>{reason}: it is not read</source>
        <translation>{reason}：不会读取该主机</translation>
    </message>
    <message>
        <source>{key} names GPU {gpu} again: it is not used</source>
        <translation>{key} 再次指定了 GPU {gpu}：不予使用</translation>
    </message>
    <message>
        <source>{reason}: its default is in use</source>
        <translation>{reason}：已改用其默认值</translation>
    </message>
    <message>
        <source>{count} more values could not be used</source>
        <translation>另有 {count} 个值无法使用</translation>
    </message>
    <message>
        <source>hidden_gpus should be a list of GPU indices</source>
        <translation>hidden_gpus 应为 GPU 索引的列表</translation>
    </message>
    <message>
        <source>remote_hosts should be a list of URLs</source>
        <translation>remote_hosts 应为 URL 列表</translation>
    </message>
    <message>
        <source>icon_remote_hosts should be a list of host names (or [&quot;*&quot;] for all)</source>
        <translation>icon_remote_hosts 应为主机名列表（或用 [&quot;*&quot;] 表示全部）</translation>
    </message>
    <message>
        <source>{key} should be a GPU index (0, 1, …)</source>
        <translation>{key} 应为 GPU 索引（0、1、…）</translation>
    </message>
    <message>
        <source> and {count} more</source>
        <translation> 等另外 {count} 项</translation>
    </message>
    <message>
        <source>{names} is not known to this version and ignored</source>
        <translation>当前版本不认识 {names}，已忽略</translation>
    </message>
    <message>
        <source>{names} are not known to this version and ignored</source>
        <translation>当前版本不认识 {names}，已忽略</translation>
    </message>
    <message>
        <source>it is larger than {size} MiB</source>
        <translation>文件大于 {size} MiB</translation>
    </message>
    <message>
        <source>The settings file {path} does not exist; defaults are in use.</source>
        <translation>设置文件 {path} 不存在；当前使用默认设置。</translation>
    </message>
    <message>
        <source>The settings file {path} could not be read, so it is not overwritten</source>
        <translation>无法读取设置文件 {path}，因此不会覆盖它</translation>
    </message>
    <message>
        <source>The settings file {path} could not be read ({reason}); it is left as it is and defaults are in use.</source>
        <translation>无法读取设置文件 {path}（{reason}）；文件保持原样，当前使用默认设置。</translation>
    </message>
    <message>
        <source>The settings file {path} is a pipe, so it is not overwritten</source>
        <translation>设置文件 {path} 是管道，因此不会覆盖它</translation>
    </message>
    <message>
        <source>The settings file {path} is used with changes: {changes}; a copy of it as it is now is kept when trayvml next saves the settings.</source>
        <translation>设置文件 {path} 已按以下变更使用：{changes}；trayvml 下次保存设置时会保留它当前内容的副本。</translation>
    </message>
    <message>
        <source>The settings file {path} could not be used, so it is not overwritten</source>
        <translation>无法使用设置文件 {path}，因此不会覆盖它</translation>
    </message>
    <message>
        <source>The settings file {path} could not be used: {reason}; it is left as it is and defaults are in use.</source>
        <translation>无法使用设置文件 {path}：{reason}；文件保持原样，当前使用默认设置。</translation>
    </message>
    <message>
        <source>The settings file {path} could not be used or set aside, so it is not overwritten</source>
        <translation>设置文件 {path} 无法使用也无法移到一旁，因此不会覆盖它</translation>
    </message>
    <message>
        <source>The settings file {path} could not be used: {reason}; it could not be moved aside either ({error}), so it is left as it is and defaults are in use.</source>
        <translation>无法使用设置文件 {path}：{reason}；也无法将其移到一旁（{error}），因此文件保持原样，当前使用默认设置。</translation>
    </message>
    <message>
        <source>The settings file {path} could not be used: {reason}; it was moved to {aside} and defaults are in use.</source>
        <translation>无法使用设置文件 {path}：{reason}；已将其移至 {aside}，当前使用默认设置。</translation>
    </message>
    <message>
        <source>The settings file {path} had been changed elsewhere: those changes are kept.</source>
        <translation>设置文件 {path} 已在别处被更改：这些更改已保留。</translation>
    </message>
    <message>
        <source>The settings file {path} had been changed elsewhere: those changes are kept but for {names}, which could not be used there and stay as they were; the file as it was is kept beside it.</source>
        <translation>设置文件 {path} 已在别处被更改：这些更改都已保留，但 {names} 在那里无法使用，保持原值；更改前的文件已保存在其旁边。</translation>
    </message>
    <message>
        <source>The settings file {path} had been changed elsewhere: those changes are kept but for {names}, changed there too, which hold what was chosen here; the file as it was is kept beside it.</source>
        <translation>设置文件 {path} 已在别处被更改：这些更改都已保留，但 {names} 在两处都被更改过，现以此处所选为准；更改前的文件已保存在其旁边。</translation>
    </message>
    <message>
        <source>Could not save the settings to {path}: {reason}.</source>
        <translation>无法将设置保存到 {path}：{reason}。</translation>
    </message>
</context>
<context>
    <name>simulate</name>
    <message>
        <source>--simulate: {key} wants {what} from 0 to {high}, not {text}.</source>
        <translation>--simulate：{key} 需要 0 到 {high} 之间的{what}，而不是 {text}。</translation>
    </message>
    <message>
        <source>a number of seconds</source>
        <translation>秒数</translation>
    </message>
    <message>
        <source>--simulate: {what} wants a whole number from {low} to {high}, not {text}.</source>
        <translation>--simulate：{what} 需要 {low} 到 {high} 之间的整数，而不是 {text}。</translation>
    </message>
    <message>
        <source>--simulate: unknown GPU profile {name}; choose from {known}.</source>
        <translation>--simulate：未知 GPU 型号 {name}；可选 {known}。</translation>
    </message>
    <message>
        <source>the count after {name}*</source>
        <translation>{name}* 后的数量</translation>
    </message>
    <message>
        <source>--simulate: at most {maximum} GPUs can be simulated, not {count}.</source>
        <translation>--simulate：最多可模拟 {maximum} 个 GPU，而不是 {count} 个。</translation>
    </message>
    <message>
        <source>--simulate: hang wants NVMLFUNCTION@SECONDS[/SECONDS], not {entry}.</source>
        <translation>--simulate：hang 的格式为 NVMLFUNCTION@SECONDS[/SECONDS]，而不是 {entry}。</translation>
    </message>
    <message>
        <source>--simulate: {key} names GPU {gpu}, but only {count} are simulated.</source>
        <translation>--simulate：{key} 指定了 GPU {gpu}，但只模拟了 {count} 个 GPU。</translation>
    </message>
    <message>
        <source>--simulate: hostpid wants GPU:PID, not {entry}.</source>
        <translation>--simulate：hostpid 应为 GPU:PID，而不是 {entry}。</translation>
    </message>
    <message>
        <source>hostpid&apos;s GPU</source>
        <translation>hostpid 的 GPU</translation>
    </message>
    <message>
        <source>--simulate: sleep wants GPU@SECONDS[/SECONDS], not {entry}.</source>
        <translation>--simulate：sleep 的格式为 GPU@SECONDS[/SECONDS]，而不是 {entry}。</translation>
    </message>
    <message>
        <source>sleep&apos;s GPU</source>
        <translation>sleep 的 GPU</translation>
    </message>
    <message>
        <source>--simulate: mig wants GPU@SECONDS:PROFILE+PROFILE..., not {entry}.</source>
        <translation>--simulate：mig 的格式为 GPU@SECONDS:PROFILE+PROFILE...，而不是 {entry}。</translation>
    </message>
    <message>
        <source>--simulate: unknown MIG profile {name}; choose from {known}.</source>
        <translation>--simulate：未知的 MIG 配置 {name}；可选 {known}。</translation>
    </message>
    <message>
        <source>--simulate: the MIG instances {layout} take {slices} slices; a GPU has {most}.</source>
        <translation>--simulate：MIG 实例 {layout} 占用 {slices} 个切片；一块 GPU 只有 {most} 个。</translation>
    </message>
    <message>
        <source>mig&apos;s GPU</source>
        <translation>mig 的 GPU</translation>
    </message>
    <message>
        <source>--simulate: replay wants a recording file, and {path} is not one.</source>
        <translation>--simulate：replay 需要一个记录文件，而 {path} 不是。</translation>
    </message>
    <message>
        <source>--simulate: unknown scenario {scenario}; choose from {known}.</source>
        <translation>--simulate：未知场景 {scenario}；可选 {known}。</translation>
    </message>
    <message>
        <source>--simulate: {item} is not of the form key=value.</source>
        <translation>--simulate：{item} 不是 key=value 的形式。</translation>
    </message>
    <message>
        <source>--simulate: lost wants GPU@SECONDS, not {entry}.</source>
        <translation>--simulate：lost 的格式为 GPU@SECONDS，而不是 {entry}。</translation>
    </message>
    <message>
        <source>lost&apos;s GPU</source>
        <translation>lost 的 GPU</translation>
    </message>
    <message>
        <source>--simulate: nvml wants one of {faults}, not {fault}.</source>
        <translation>--simulate：nvml 需要 {faults} 之一，而不是 {fault}。</translation>
    </message>
    <message>
        <source>--simulate: procperm wants yes or no, not {value}.</source>
        <translation>--simulate：procperm 需要 yes 或 no，而不是 {value}。</translation>
    </message>
    <message>
        <source>simulated seconds per second</source>
        <translation>每秒模拟的秒数</translation>
    </message>
    <message>
        <source>--simulate: speed must be greater than 0.</source>
        <translation>--simulate：speed 必须大于 0。</translation>
    </message>
    <message>
        <source>--simulate: latency wants none or realistic, not {value}.</source>
        <translation>--simulate：latency 需要 none 或 realistic，而不是 {value}。</translation>
    </message>
    <message>
        <source>--simulate: unknown option {key} (known: {known}).</source>
        <translation>--simulate：未知选项 {key}（可用：{known}）。</translation>
    </message>
    <message>
        <source>--simulate: sleep names GPU {gpu}, a {profile}: only laptop GPUs runtime-suspend.</source>
        <translation>--simulate：sleep 指定的 GPU {gpu} 是 {profile}：只有笔记本电脑 GPU 会运行时挂起。</translation>
    </message>
    <message>
        <source>--simulate: mig names GPU {gpu}, a {profile}, which has no MIG mode.</source>
        <translation>--simulate：mig 指定的 GPU {gpu} 是 {profile}，它没有 MIG 模式。</translation>
    </message>
</context>
<context>
    <name>store</name>
    <message>
        <source>The history in {folder} is being written by process {pid}; one writer at a time.</source>
        <translation>{folder} 中的历史记录正由进程 {pid} 写入；同一时间只能有一个写入者。</translation>
    </message>
    <message>
        <source>History is kept in memory only: cannot write {folder} ({reason}); trying again every {seconds} s.</source>
        <translation>历史记录仅保存在内存中：无法写入 {folder}（{reason}）；每 {seconds} 秒重试一次。</translation>
    </message>
    <message>
        <source>{problem} The window shows what it writes.</source>
        <translation>{problem}窗口会显示它写入的内容。</translation>
    </message>
    <message>
        <source>History is kept in memory only: cannot write {folder} ({reason}).</source>
        <translation>历史记录仅保存在内存中：无法写入 {folder}（{reason}）。</translation>
    </message>
</context>
<context>
    <name>units</name>
    <message>
        <source>% of limit</source>
        <translation>%（占上限）</translation>
    </message>
    <message>
        <source>enabled</source>
        <translation>已启用</translation>
    </message>
    <message>
        <source>disabled</source>
        <translation>已禁用</translation>
    </message>
</context>
</TS>
